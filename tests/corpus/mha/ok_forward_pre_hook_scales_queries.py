# attnprep: mha
# expect: passed
"""Correct: the score module scales its query input in a forward pre-hook registered at
construction (register_forward_pre_hook returning the new args), an nn.Module core taking
(q, k, v, mask) and returning (out, probs), an additive float mask made with new_full."""

import math

import torch
import torch.nn as nn


class DotProductCore(nn.Module):
    def forward(self, q, k, v, bias):
        p = torch.softmax(q @ k.transpose(-2, -1) + bias, dim=-1)
        return p @ v, p


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.core = DotProductCore()
        scale = 1.0 / math.sqrt(self.head_dim)
        self.core.register_forward_pre_hook(lambda mod, args: (args[0] * scale, *args[1:]))

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        sh = lambda t: t.view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        q, k, v = sh(self.q_proj(x)), sh(self.k_proj(x)), sh(self.v_proj(x))
        bias = x.new_zeros(B, 1, T, T)
        neg = torch.finfo(x.dtype).min
        if is_causal:
            bias = bias.masked_fill(torch.triu(x.new_ones(T, T, dtype=torch.bool), 1), neg)
        if attention_mask is not None:
            bias = bias.masked_fill(~attention_mask[:, None, None, :], neg)
        out, _ = self.core(q, k, v, bias)
        return self.o_proj(out.transpose(1, 2).reshape(B, T, -1))
