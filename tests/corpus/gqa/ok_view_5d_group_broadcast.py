# attnprep: gqa
# expect: passed
"""Correct, no copy of K/V: queries viewed (B, G, R, T, D) against keys (B, G, 1, T, D), matmul broadcasts over the group, -1e9 fill."""

import math

import torch
import torch.nn as nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.h, self.g = num_heads, num_kv_heads
        self.d = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.d)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.d)
        self.o_proj = nn.Linear(d_model, d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        r = self.h // self.g
        q = self.q_proj(x).view(B, T, self.g, r, self.d).permute(0, 2, 3, 1, 4)   # (B, G, R, T, D)
        k = self.k_proj(x).view(B, T, self.g, 1, self.d).permute(0, 2, 3, 1, 4)   # (B, G, 1, T, D)
        v = self.v_proj(x).view(B, T, self.g, 1, self.d).permute(0, 2, 3, 1, 4)
        s = q @ k.transpose(-1, -2) / math.sqrt(self.d)                          # (B, G, R, T, T)
        if is_causal:
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), -1e9)
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask.view(B, 1, 1, 1, T), -1e9)
        p = self.drop(s.softmax(-1))
        o = (p @ v).permute(0, 3, 1, 2, 4).reshape(B, T, C)                      # heads g*r + i
        return self.o_proj(o)
