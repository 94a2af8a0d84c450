# attnprep: mha
# expect: mask_leak
# diagnosis: masks_ignored
"""The masks are built into an additive bias and passed to baddbmm with beta=0, which drops the
bias: both masks ignored, with no masked_fill result thrown away."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, dropout: float = 0.0):
        super().__init__()
        assert d_model % num_heads == 0, "d_model must be divisible by num_heads"
        self.d_model = d_model
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        H, D = self.num_heads, self.head_dim

        q = self.q_proj(x).view(B, T, H, D).transpose(1, 2)  # (B, H, T, D)
        k = self.k_proj(x).view(B, T, H, D).transpose(1, 2)  # (B, H, T, D)
        v = self.v_proj(x).view(B, T, H, D).transpose(1, 2)  # (B, H, T, D)

        bias = torch.zeros(B, 1, T, T, dtype=x.dtype, device=x.device)  # additive: 0 or -inf
        if is_causal:
            future = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), diagonal=1)
            bias = bias.masked_fill(future, float("-inf"))
        if attention_mask is not None:
            bias = bias.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        bias = bias.expand(B, H, T, T).reshape(B * H, T, T)
        q, k = q.reshape(B * H, T, D), k.reshape(B * H, T, D)
        scores = torch.baddbmm(bias, q, k.transpose(1, 2), beta=0.0, alpha=D ** -0.5)  # beta=0 drops the bias
        scores = scores.view(B, H, T, T)

        attn = F.softmax(scores, dim=-1)
        attn = self.dropout(attn)
        out = attn @ v  # (B, H, T, D)
        out = out.transpose(1, 2).contiguous().view(B, T, C)  # (B, T, C)
        return self.o_proj(out)
