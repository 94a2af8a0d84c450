# attnprep: cross_attention
# expect: passed
"""Correct: Perceiver-style cross-attention with pre-split per-head key/value weights kept as one
(2, d_model, d_context) stack with a (2, d_model) bias, projected with einsum; queries and output plain."""
import math
import torch
import torch.nn as nn


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        d_context = d_context or d_model
        self.h = num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.kv_weight = nn.Parameter(torch.randn(2, d_model, d_context) / math.sqrt(d_context))
        self.kv_bias = nn.Parameter(torch.zeros(2, d_model))
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, context, context_mask=None):
        B, T, C = x.shape
        S = context.shape[1]
        kv = torch.einsum("bsc,koc->kbso", context, self.kv_weight) + self.kv_bias[:, None, None, :]
        k, v = (t.view(B, S, self.h, -1).transpose(1, 2) for t in kv.unbind(0))
        q = self.q_proj(x).view(B, T, self.h, -1).transpose(1, 2)
        s = q @ k.transpose(-1, -2) / math.sqrt(C // self.h)
        if context_mask is not None:
            s = s.masked_fill(~context_mask[:, None, None, :], float("-inf"))
        return self.o_proj((s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C))
