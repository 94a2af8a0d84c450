# attnprep: mha
# expect: passed
"""Correct up to names: einsum with wk's output on the rows, so wk is the query projection and wq the key one;
the weights are mapped by shape, and k @ q^T with the names swapped is q @ k^T."""

import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h = num_heads
        self.d_k = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q = self.wq(x).view(B, T, self.h, self.d_k)  # (B, T, H, D)
        k = self.wk(x).view(B, T, self.h, self.d_k)
        v = self.wv(x).view(B, T, self.h, self.d_k)

        scores = torch.einsum("bqhd,bkhd->bhqk", k, q) / math.sqrt(self.d_k)  # (B, H, T, T)
        if is_causal:
            future = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), diagonal=1)
            scores = scores.masked_fill(future, -1e9)
        if attention_mask is not None:
            scores = scores.masked_fill(attention_mask[:, None, None, :] == 0, -1e9)

        p = self.drop(scores.softmax(-1))
        out = torch.einsum("bhqk,bkhd->bqhd", p, v).reshape(B, T, C)  # (B, T, C)
        return self.wo(out)
