# attnprep: mha
# expect: mask_leak
# diagnosis: causal_leaks_next
"""Masks from cumulative sums: the causal rule as "the key's rank (a cumsum of ones along the keys)
is at most the query's rank + 1", and the padding mask folded in as an additive bias from
attention_mask's logical_not, torch.baddbmm over (B*H) for the scores. The causal rank comparison is
off by one: each query also sees the next key."""

import math

import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h, self.d = num_heads, d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        H, D = self.h, self.d
        q, k, v = (p(x).view(B, T, H, D).transpose(1, 2).reshape(B * H, T, D)
                   for p in (self.q_proj, self.k_proj, self.v_proj))
        bias = x.new_zeros(B, H, T, T)
        if is_causal:
            ones = torch.ones(T, T, device=x.device)
            key_rank = ones.cumsum(dim=1)  # 1 .. T along the keys
            query_rank = ones.cumsum(dim=0)  # 1 .. T along the queries
            bias = bias.masked_fill(key_rank > query_rank + 1, float("-inf"))
        if attention_mask is not None:
            bias = bias.masked_fill(attention_mask.logical_not()[:, None, None, :], float("-inf"))
        s = torch.baddbmm(bias.reshape(B * H, T, T), q, k.transpose(1, 2), alpha=1 / math.sqrt(D))
        y = torch.bmm(self.drop(s.softmax(-1)), v).view(B, H, T, D).transpose(1, 2).reshape(B, T, C)
        return self.o_proj(y)
# bug-line: 35
