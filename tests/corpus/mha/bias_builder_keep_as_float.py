# attnprep: mha
# expect: mask_leak
"""Attention with a separate "bias builder" step, the way encoder codebases keep their masking
apart from the scores: `key_bias(attention_mask)` should give an additive (B, 1, 1, T) bias, 0 for
real keys and -inf for padding. It returns the keep-mask cast to float instead (1.0 for real keys,
0.0 for padding), so the scores of real keys are shifted by one and padded keys stay visible. Not
the catalogue's padding_mask_ignored (the real keys move too): nothing is named."""

import torch
import torch.nn as nn


def key_bias(attention_mask, dtype):
    return attention_mask[:, None, None, :].to(dtype)  # (B, 1, 1, T)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h = num_heads
        self.dk = d_model // num_heads
        self.qkv = nn.ModuleDict({n: nn.Linear(d_model, d_model) for n in ("q", "k", "v")})
        self.out = nn.Linear(d_model, d_model)
        self.drop = nn.Dropout(dropout)

    def split(self, t):
        b, n, _ = t.shape
        return t.view(b, n, self.h, self.dk).permute(0, 2, 1, 3)

    def forward(self, x, attention_mask=None, is_causal=False):
        b, n, d = x.shape
        q, k, v = (self.split(self.qkv[name](x)) for name in ("q", "k", "v"))
        scores = torch.matmul(q, k.transpose(2, 3)) * self.dk ** -0.5
        if is_causal:
            future = torch.triu(torch.ones(n, n, dtype=torch.bool, device=x.device), diagonal=1)
            scores = scores.masked_fill(future, float("-inf"))
        if attention_mask is not None:
            scores = scores + key_bias(attention_mask, scores.dtype)
        attn = self.drop(torch.softmax(scores, dim=-1))
        return self.out(torch.matmul(attn, v).permute(0, 2, 1, 3).reshape(b, n, d))
# bug-line: 14
