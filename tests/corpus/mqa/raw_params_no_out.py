# attnprep: mqa
# expect: wrong_output
# diagnosis: output_proj_skipped
"""Bare (in, out) matrices used as x @ W + b; the last line returns the merged heads and forgets W_o."""

import math

import torch
import torch.nn as nn


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h = num_heads
        self.d = d_model // num_heads
        self.W_q = nn.Parameter(torch.randn(d_model, d_model) / math.sqrt(d_model))
        self.b_q = nn.Parameter(torch.zeros(d_model))
        self.W_k = nn.Parameter(torch.randn(d_model, self.d) / math.sqrt(d_model))
        self.b_k = nn.Parameter(torch.zeros(self.d))
        self.W_v = nn.Parameter(torch.randn(d_model, self.d) / math.sqrt(d_model))
        self.b_v = nn.Parameter(torch.zeros(self.d))
        self.W_o = nn.Parameter(torch.randn(d_model, d_model) / math.sqrt(d_model))
        self.b_o = nn.Parameter(torch.zeros(d_model))

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q = (x @ self.W_q + self.b_q).view(B, T, self.h, self.d).transpose(1, 2)
        k = (x @ self.W_k + self.b_k)[:, None]
        v = (x @ self.W_v + self.b_v)[:, None]
        s = q @ k.transpose(-1, -2) / math.sqrt(self.d)
        if is_causal:
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        o = (s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C)
        return o
# bug-line: 37
