# attnprep: mha
# expect: wrong_output
# diagnosis: missing_scale
"""Buggy: the scores never scaled by 1/sqrt(head_dim). Otherwise correct: The output projection per head: a ModuleList of Linear(head_dim, d_model), the heads'
projections summed (the o_proj split by its input columns), one bias kept apart."""
import math
import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.H, self.D = num_heads, d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_heads = nn.ModuleList(nn.Linear(self.D, d_model, bias=False) for _ in range(num_heads))
        self.o_bias = nn.Parameter(torch.zeros(d_model))

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q, k, v = (p(x).view(B, T, self.H, self.D).transpose(1, 2) for p in (self.q_proj, self.k_proj, self.v_proj))
        s = q @ k.transpose(-1, -2)
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        o = s.softmax(-1) @ v  # (B, H, T, D)
        return sum(self.o_heads[h](o[:, h]) for h in range(self.H)) + self.o_bias
# bug-line: 24
