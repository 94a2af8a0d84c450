# attnprep: mqa
# expect: mask_leak
# diagnosis: padding_mask_on_queries + scale_d_model
"""Multi-query attention whose padding mask is put on the query rows ([:, None, :, None]) and whose
scores are divided by sqrt(d_model)."""

import math

import torch
import torch.nn as nn


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.d_model, self.num_heads = d_model, num_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, self.head_dim)
        self.v_proj = nn.Linear(d_model, self.head_dim)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x)[:, None]  # (B, 1, T, D)
        v = self.v_proj(x)[:, None]
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_model)
        if attention_mask is not None:
            scores = scores.masked_fill(~attention_mask[:, None, :, None], float("-inf"))
        if is_causal:
            scores = scores.masked_fill(~torch.ones(T, T, dtype=torch.bool, device=x.device).tril(), float("-inf"))
        out = torch.softmax(scores, -1) @ v
        return self.o_proj(out.transpose(1, 2).reshape(B, T, self.d_model))
