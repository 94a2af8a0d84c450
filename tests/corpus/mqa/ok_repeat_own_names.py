# attnprep: mqa
# expect: passed
"""Correct: own names wq/wk/wv/wo, K/V tiled with repeat, finfo.min, nn.Softmax, returns (out, weights)."""

import math

import torch
import torch.nn as nn


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.n_heads = num_heads
        self.d_head = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, self.d_head)
        self.wv = nn.Linear(d_model, self.d_head)
        self.wo = nn.Linear(d_model, d_model)
        self.softmax = nn.Softmax(dim=-1)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q = self.wq(x).reshape(B, T, self.n_heads, self.d_head).permute(0, 2, 1, 3)  # (B, H, T, D)
        k = self.wk(x)[:, None].repeat(1, self.n_heads, 1, 1)  # (B, H, T, D)
        v = self.wv(x)[:, None].repeat(1, self.n_heads, 1, 1)  # (B, H, T, D)

        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)
        min_val = torch.finfo(scores.dtype).min
        if attention_mask is not None:
            scores = scores.masked_fill(~attention_mask.bool()[:, None, None, :], min_val)
        if is_causal:
            future = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
            scores = scores.masked_fill(future, min_val)

        weights = self.drop(self.softmax(scores))
        out = (weights @ v).permute(0, 2, 1, 3).reshape(B, T, C)
        return self.wo(out), weights
