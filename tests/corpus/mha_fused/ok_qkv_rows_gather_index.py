# attnprep: mha_fused
# expect: passed
"""Correct: the fused output passed through index_select over a buffer of row indices (the identity order here,
kept for a checkpoint's permutation), then viewed (B, T, 3, H, D); an additive mask by torch.where over zeros."""
import math
import torch
import torch.nn as nn


class FusedMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.H, self.D = num_heads, d_model // num_heads
        self.qkv_proj = nn.Linear(d_model, 3 * d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.register_buffer("order", torch.arange(3 * d_model), persistent=False)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        qkv = self.qkv_proj(x).index_select(-1, self.order.to(x.device)).view(B, T, 3, self.H, self.D)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)
        s = q @ k.transpose(-2, -1) / math.sqrt(self.D)
        bias = torch.zeros(B, 1, T, T, dtype=s.dtype, device=x.device)
        if attention_mask is not None:
            bias = torch.where(attention_mask[:, None, None, :], bias, float("-inf"))
        if is_causal:
            bias = torch.where(torch.ones(T, T, dtype=torch.bool, device=x.device).tril(), bias, float("-inf"))
        y = (s + bias).softmax(-1) @ v
        return self.o_proj(y.transpose(1, 2).reshape(B, T, C))
