# attnprep: mha_fused
# expect: passed
"""Correct: qkv.chunk(3, -1), heads folded into the batch, baddbmm onto an additive (B*H, T, T) bias, bmm."""

import math

import torch
import torch.nn as nn


class FusedMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.H = num_heads
        self.Dh = d_model // num_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (t.reshape(B, T, self.H, self.Dh).transpose(1, 2).reshape(B * self.H, T, self.Dh) for t in (q, k, v))
        bias = x.new_zeros(B, 1, T, T)
        if is_causal:
            bias = bias + torch.full((T, T), float("-inf"), device=x.device).triu(1)
        if attention_mask is not None:
            bias = bias.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        bias = bias.expand(B, self.H, T, T).reshape(B * self.H, T, T)
        att = torch.baddbmm(bias, q, k.transpose(-1, -2), alpha=1 / math.sqrt(self.Dh))
        att = self.drop(att.softmax(-1))
        y = torch.bmm(att, v).view(B, self.H, T, self.Dh).permute(0, 2, 1, 3).reshape(B, T, C)
        return self.out(y)
