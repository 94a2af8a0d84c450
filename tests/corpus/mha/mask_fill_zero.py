# attnprep: mha
# expect: mask_leak
# diagnosis: mask_fill_zero
"""Causal buffer and padding combined into `keep`, then the scores are multiplied by it: masked scores become 0, not -1e9."""

import math

import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0, max_len=64):
        super().__init__()
        self.h, self.d = num_heads, d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.drop = nn.Dropout(dropout)
        self.register_buffer("causal", torch.tril(torch.ones(max_len, max_len, dtype=torch.bool)), persistent=False)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q, k, v = (p(x).view(B, T, self.h, self.d).transpose(1, 2) for p in (self.q_proj, self.k_proj, self.v_proj))
        scores = q @ k.transpose(-2, -1) * self.d**-0.5  # (B, H, T, T)
        keep = torch.ones(T, T, dtype=torch.bool).to(x.device)
        if is_causal:
            keep = keep & self.causal[:T, :T]
        if attention_mask is not None:
            keep = keep & attention_mask[:, None, None, :]
        scores = scores * keep  # zero out what may not be attended
        out = self.drop(scores.softmax(-1)) @ v  # (B, H, T, D)
        return self.o_proj(out.transpose(1, 2).reshape(B, T, C))
