# attnprep: gqa
# expect: passed
"""Correct: bias-free projections with the biases kept per head beside them, q_bias (H, D) and
k_bias / v_bias (KV, D), added after the head split; KV heads repeated with repeat_interleave."""

import math

import torch
import torch.nn as nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        H, KV, D = num_heads, num_kv_heads, d_model // num_heads
        self.H, self.KV, self.D = H, KV, D
        self.q = nn.Linear(d_model, H * D, bias=False)
        self.k = nn.Linear(d_model, KV * D, bias=False)
        self.v = nn.Linear(d_model, KV * D, bias=False)
        self.o = nn.Linear(H * D, d_model)
        self.q_bias = nn.Parameter(torch.zeros(H, D))
        self.k_bias = nn.Parameter(torch.zeros(KV, D))
        self.v_bias = nn.Parameter(torch.zeros(KV, D))

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        q = (self.q(x).view(B, T, self.H, self.D) + self.q_bias).transpose(1, 2)
        k = (self.k(x).view(B, T, self.KV, self.D) + self.k_bias).transpose(1, 2)
        v = (self.v(x).view(B, T, self.KV, self.D) + self.v_bias).transpose(1, 2)
        k = k.repeat_interleave(self.H // self.KV, dim=1)
        v = v.repeat_interleave(self.H // self.KV, dim=1)
        s = q @ k.transpose(-1, -2) / math.sqrt(self.D)
        if is_causal:
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        return self.o((s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, -1))
