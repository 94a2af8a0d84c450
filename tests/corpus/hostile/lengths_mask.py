# attnprep: mha
# expect: mask_leak
"""Builds the padding mask from lengths (arange(T) < attention_mask.sum(-1)): right for right
padding only; left-padded batches (generation) show it."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h = num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q, k, v = (p(x).view(B, T, self.h, -1).transpose(1, 2) for p in (self.q_proj, self.k_proj, self.v_proj))
        scores = q @ k.transpose(-2, -1) / math.sqrt(C // self.h)
        if is_causal:
            scores = scores.masked_fill(~torch.ones(T, T, dtype=torch.bool, device=x.device).tril(), float("-inf"))
        if attention_mask is not None:
            lengths = attention_mask.sum(-1)  # (B,)
            real = torch.arange(T, device=x.device)[None, :] < lengths[:, None]  # (B, T)
            scores = scores.masked_fill(~real[:, None, None, :], float("-inf"))
        out = (F.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(B, T, C)
        return self.o_proj(out)
