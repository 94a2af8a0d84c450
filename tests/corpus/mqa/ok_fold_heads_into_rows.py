# attnprep: mqa
# expect: passed
"""Correct, the MQA trick: all heads' queries folded into the query rows, (B, H*T, D) @ (B, D, T), one bmm, additive mask repeated per head."""

import math

import torch
import torch.nn as nn


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.H = num_heads
        self.D = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, self.D)
        self.v_proj = nn.Linear(d_model, self.D)
        self.o_proj = nn.Linear(d_model, d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.H, self.D).permute(0, 2, 1, 3).reshape(B, self.H * T, self.D)
        k, v = self.k_proj(x), self.v_proj(x)                  # (B, T, D)
        bias = torch.zeros(B, T, T, device=x.device, dtype=x.dtype)
        if is_causal:
            bias = bias.masked_fill(torch.ones(T, T, device=x.device, dtype=torch.bool).triu(1), float("-inf"))
        if attention_mask is not None:
            bias = bias.masked_fill(~attention_mask[:, None, :], float("-inf"))
        bias = bias.repeat(1, self.H, 1)                         # (B, H*T, T): row h*T + i
        s = torch.baddbmm(bias, q, k.transpose(1, 2), alpha=1 / math.sqrt(self.D))
        o = torch.bmm(self.drop(s.softmax(-1)), v)              # (B, H*T, D)
        o = o.view(B, self.H, T, self.D).transpose(1, 2).reshape(B, T, C)
        return self.o_proj(o)
