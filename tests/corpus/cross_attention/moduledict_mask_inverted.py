# attnprep: cross_attention
# expect: mask_leak
# diagnosis: padding_mask_inverted
"""Buggy: the context mask used as it is: the real keys are the ones filled. Otherwise correct: Per-head modules in a ModuleDict keyed "head0", "head1", ...; each its own q (d_model -> D) and
k, v (d_context -> D); heads concatenated, then out."""
import math
import torch
import torch.nn as nn


class Head(nn.Module):
    def __init__(self, d_model, d_context, D):
        super().__init__()
        self.query = nn.Linear(d_model, D)
        self.key = nn.Linear(d_context, D)
        self.value = nn.Linear(d_context, D)

    def forward(self, x, c, bias):
        s = self.query(x) @ self.key(c).transpose(1, 2) / math.sqrt(self.query.out_features) + bias
        return s.softmax(-1) @ self.value(c)


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        d_context = d_context or d_model
        self.heads = nn.ModuleDict({f"head{i}": Head(d_model, d_context, d_model // num_heads) for i in range(num_heads)})
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x, context, context_mask=None):
        bias = torch.zeros(context.shape[0], 1, context.shape[1], dtype=x.dtype, device=x.device)
        if context_mask is not None:
            bias = bias.masked_fill(context_mask[:, None, :], float("-inf"))
        return self.proj(torch.cat([h(x, context, bias) for h in self.heads.values()], dim=-1))
# bug-line: 33
