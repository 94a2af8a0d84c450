# attnprep: mqa
# expect: passed
"""Correct: the single key / value head kept 3-d (B, T, D) and broadcast by matmul against the 4-d
queries through an unsqueeze(1) on k.mT; reset_parameters with trunc_normal_ weights and the
masks as an additive bias made with new_full."""

import math

import torch
import torch.nn as nn


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.num_heads, self.head_dim = num_heads, d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, self.head_dim)
        self.v_proj = nn.Linear(d_model, self.head_dim)
        self.o_proj = nn.Linear(d_model, d_model)
        self.reset_parameters()

    def reset_parameters(self):
        for lin in (self.q_proj, self.k_proj, self.v_proj, self.o_proj):
            nn.init.trunc_normal_(lin.weight, std=0.02)
            nn.init.constant_(lin.bias, 0.0)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.num_heads, self.head_dim).transpose(1, 2)  # (B, H, T, D)
        k = self.k_proj(x)  # (B, T, D)
        v = self.v_proj(x)
        scores = q @ k.mT.unsqueeze(1) / math.sqrt(self.head_dim)  # (B, H, T, T)
        bias = scores.new_zeros(B, 1, T, T)
        if is_causal:
            bias = bias.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        if attention_mask is not None:
            bias = bias.masked_fill(~attention_mask.view(B, 1, 1, T), float("-inf"))
        p = torch.softmax(scores + bias, dim=-1)
        out = p @ v.unsqueeze(1)  # (B, H, T, D)
        return self.o_proj(out.transpose(1, 2).flatten(2))
