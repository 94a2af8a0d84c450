# attnprep: mha
# expect: wrong_output
# diagnosis: missing_scale
"""Bias-free projections with a bias per head kept apart as (H, D) parameters added after the head
split; the scores are never scaled by 1/sqrt(head_dim)."""

import math

import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        H, D = num_heads, d_model // num_heads
        self.H, self.D = H, D
        self.q_proj = nn.Linear(d_model, d_model, bias=False)
        self.k_proj = nn.Linear(d_model, d_model, bias=False)
        self.v_proj = nn.Linear(d_model, d_model, bias=False)
        self.o_proj = nn.Linear(d_model, d_model, bias=False)
        self.q_bias = nn.Parameter(torch.zeros(H, D))
        self.k_bias = nn.Parameter(torch.zeros(H, D))
        self.v_bias = nn.Parameter(torch.zeros(H, D))
        self.o_bias = nn.Parameter(torch.zeros(d_model))

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        q = (self.q_proj(x).view(B, T, self.H, self.D) + self.q_bias).transpose(1, 2)
        k = (self.k_proj(x).view(B, T, self.H, self.D) + self.k_bias).transpose(1, 2)
        v = (self.v_proj(x).view(B, T, self.H, self.D) + self.v_bias).transpose(1, 2)
        s = q @ k.transpose(-1, -2)
        if is_causal:
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        o = (s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, -1)
        return self.o_proj(o) + self.o_bias
# bug-line: 32
