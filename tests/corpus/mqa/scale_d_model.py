# attnprep: mqa
# expect: wrong_output
# diagnosis: scale_d_model
"""Einsum version scaled by sqrt(d_model) instead of sqrt(head_dim)."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.d_model = d_model
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.dropout = dropout
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, self.head_dim)
        self.v_proj = nn.Linear(d_model, self.head_dim)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.num_heads, self.head_dim)  # (B, T, H, D)
        k = self.k_proj(x)  # (B, T, D)
        v = self.v_proj(x)  # (B, T, D)

        scores = torch.einsum("bqhd,bkd->bhqk", q, k) / math.sqrt(self.d_model)  # (B, H, T, T)
        mask = torch.zeros(B, 1, T, T, dtype=x.dtype, device=x.device)
        if is_causal:
            i = torch.arange(T, device=x.device)
            mask = mask.masked_fill(i[None, :] > i[:, None], float("-inf"))
        if attention_mask is not None:
            mask = torch.where(attention_mask[:, None, None, :], mask, float("-inf"))

        p = torch.softmax(scores + mask, dim=-1)
        p = F.dropout(p, p=self.dropout, training=self.training)
        out = torch.einsum("bhqk,bkd->bqhd", p, v).reshape(B, T, C)
        return self.o_proj(out)
