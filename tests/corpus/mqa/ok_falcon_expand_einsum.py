# attnprep: mqa
# expect: passed
"""Falcon-style multi-query: one K/V head broadcast with expand, einsum, Chinese comments."""

import math

import torch
import torch.nn as nn


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, self.head_dim)  # 单个 KV 头
        self.value = nn.Linear(d_model, self.head_dim)
        self.dense = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q = self.query(x).view(B, T, self.num_heads, self.head_dim)
        k = self.key(x).unsqueeze(2).expand(B, T, self.num_heads, self.head_dim)  # 广播到所有头
        v = self.value(x).unsqueeze(2).expand(B, T, self.num_heads, self.head_dim)
        s = torch.einsum("bihd,bjhd->bhij", q, k) / math.sqrt(self.head_dim)
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask[:, None, None, :], -1e9)  # 填充位置
        if is_causal:
            s = s.masked_fill(torch.ones(T, T, device=x.device).triu(1).bool(), -1e9)  # 因果
        p = s.softmax(-1)
        return self.dense(torch.einsum("bhij,bjhd->bihd", p, v).reshape(B, T, C))
