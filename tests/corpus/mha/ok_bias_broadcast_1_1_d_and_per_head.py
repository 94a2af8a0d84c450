# attnprep: mha
# expect: passed
"""Correct: bias-free nn.Linear projections, q's bias kept as (1, 1, d_model) and the others per head as (H, D),
added after the head split (as some JAX ports keep DenseGeneral's bias); the output projection's
bias a plain (d_model,) parameter added at the end."""

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
        self.q_bias = nn.Parameter(torch.zeros(1, 1, H * D))
        self.k_bias = nn.Parameter(torch.zeros(H, D))
        self.v_bias = nn.Parameter(torch.zeros(H, D))
        self.o_bias = nn.Parameter(torch.zeros(d_model))

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        q = (self.q_proj(x) + self.q_bias).view(B, T, self.H, self.D).transpose(1, 2)
        k = (self.k_proj(x).view(B, T, self.H, self.D) + self.k_bias).transpose(1, 2)
        v = (self.v_proj(x).view(B, T, self.H, self.D) + self.v_bias).transpose(1, 2)
        s = q @ k.transpose(-1, -2) / math.sqrt(self.D)
        if is_causal:
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        o = (s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, -1)
        return self.o_proj(o) + self.o_bias
