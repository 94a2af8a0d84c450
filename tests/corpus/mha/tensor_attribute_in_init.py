# attnprep: mha
# expect: error
# diagnosis: tensor_without_device
"""The causal mask is a plain tensor attribute set in __init__: module.to("cuda") does not move it."""

import math

import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h, self.d = num_heads, d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.drop = nn.Dropout(dropout)
        self.causal = torch.tril(torch.ones(256, 256, dtype=torch.bool))  # not a buffer

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q, k, v = (p(x).view(B, T, self.h, self.d).transpose(1, 2) for p in (self.q_proj, self.k_proj, self.v_proj))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d)  # (B, H, T, T)
        if is_causal:
            scores = scores.masked_fill(~self.causal[:T, :T], float("-inf"))
        if attention_mask is not None:
            scores = scores.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        out = self.drop(scores.softmax(-1)) @ v  # (B, H, T, D)
        return self.o_proj(out.transpose(1, 2).reshape(B, T, C))
