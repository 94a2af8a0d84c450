# attnprep: mha
# expect: passed
"""Correct, fairseq / Megatron flavour: heads folded into the batch (B*H, T, D), torch.baddbmm with alpha = scale, bmm."""

import math

import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h = num_heads
        self.d = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.drop = nn.Dropout(dropout)

    def _fold(self, t, B, T):
        # (B, T, H*D) -> (B*H, T, D)
        return t.view(B, T, self.h, self.d).permute(0, 2, 1, 3).reshape(B * self.h, T, self.d)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        q = self._fold(self.q_proj(x), B, T)
        k = self._fold(self.k_proj(x), B, T)
        v = self._fold(self.v_proj(x), B, T)

        bias = torch.zeros(B, 1, T, T, dtype=x.dtype, device=x.device)
        if is_causal:
            future = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), diagonal=1)
            bias = bias.masked_fill(future, -1e9)
        if attention_mask is not None:
            bias = bias.masked_fill(~attention_mask.view(B, 1, 1, T), -1e9)
        bias = bias.expand(B, self.h, T, T).reshape(B * self.h, T, T)

        # scores = bias + (q @ k^T) / sqrt(d)
        scores = torch.baddbmm(bias, q, k.transpose(1, 2), beta=1.0, alpha=1.0 / math.sqrt(self.d))
        probs = self.drop(torch.softmax(scores, dim=-1))
        out = torch.bmm(probs, v)  # (B*H, T, D)
        out = out.view(B, self.h, T, self.d).transpose(1, 2).reshape(B, T, self.h * self.d)
        return self.o_proj(out)
