# attnprep: mha
# expect: passed
"""Heads folded into the batch (B*H, T, D) as Megatron / GPT-NeoX's baddbmm path does: the scores come
from torch.baddbmm with alpha = 1/sqrt(D) on a zero-filled buffer, an additive float mask: correct."""

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

    def _fold(self, t, B, T):
        return t.view(B, T, self.h, self.d).permute(0, 2, 1, 3).reshape(B * self.h, T, self.d)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q, k, v = (self._fold(p(x), B, T) for p in (self.q_proj, self.k_proj, self.v_proj))
        bias = torch.zeros(B, 1, T, T, dtype=x.dtype, device=x.device)
        neg = torch.finfo(x.dtype).min
        if attention_mask is not None:
            bias = bias.masked_fill(~attention_mask[:, None, None, :], neg)
        if is_causal:
            future = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
            bias = bias.masked_fill(future, neg)
        bias = bias.expand(B, self.h, T, T).reshape(B * self.h, T, T)
        scores = torch.baddbmm(bias, q, k.transpose(1, 2), beta=1.0, alpha=1.0 / math.sqrt(self.d))
        probs = self.drop(scores.softmax(-1))
        ctx = torch.bmm(probs, v).view(B, self.h, T, self.d).transpose(1, 2).reshape(B, T, C)
        return self.o_proj(ctx)
