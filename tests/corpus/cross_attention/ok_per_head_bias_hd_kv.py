# attnprep: cross_attention
# expect: passed
"""Correct: bias-free projections with their biases kept per head as (H, D) parameters named
after each layer (to_q + to_q_bias ...), added after the head split."""

import math

import torch
import torch.nn as nn


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        dc = d_context or d_model
        H, D = num_heads, d_model // num_heads
        self.H, self.D = H, D
        self.to_q = nn.Linear(d_model, d_model, bias=False)
        self.to_k = nn.Linear(dc, d_model, bias=False)
        self.to_v = nn.Linear(dc, d_model, bias=False)
        self.to_q_bias = nn.Parameter(torch.zeros(H, D))
        self.to_k_bias = nn.Parameter(torch.zeros(H, D))
        self.to_v_bias = nn.Parameter(torch.zeros(H, D))
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x, context, context_mask=None):
        B, T, _ = x.shape
        S = context.shape[1]
        q = (self.to_q(x).view(B, T, self.H, self.D) + self.to_q_bias).transpose(1, 2)
        k = (self.to_k(context).view(B, S, self.H, self.D) + self.to_k_bias).transpose(1, 2)
        v = (self.to_v(context).view(B, S, self.H, self.D) + self.to_v_bias).transpose(1, 2)
        s = torch.einsum("bhtd,bhsd->bhts", q, k) / math.sqrt(self.D)
        if context_mask is not None:
            s = s.masked_fill(~context_mask[:, None, None, :], float("-inf"))
        o = torch.einsum("bhts,bhsd->bthd", s.softmax(-1), v).reshape(B, T, -1)
        return self.out(o)
