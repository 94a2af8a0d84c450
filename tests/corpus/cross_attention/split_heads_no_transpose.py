# attnprep: cross_attention
# expect: wrong_output
# diagnosis: split_heads_no_transpose
"""Heads split with a view to (B, H, n, D) and no transpose."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        d_context = d_context or d_model
        self.d_model = d_model
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_context, d_model)
        self.v_proj = nn.Linear(d_context, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, context, context_mask=None):
        B, T, _ = x.shape
        S = context.shape[1]
        q = self.q_proj(x).view(B, self.num_heads, T, self.head_dim)  # (B, H, T, D)
        k = self.k_proj(context).view(B, self.num_heads, S, self.head_dim)  # (B, H, S, D)
        v = self.v_proj(context).view(B, self.num_heads, S, self.head_dim)  # (B, H, S, D)

        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)  # (B, H, T, S)
        if context_mask is not None:
            scores = scores.masked_fill(context_mask[:, None, None, :] == 0, float("-inf"))
        attn = torch.softmax(scores, dim=-1)
        attn = self.dropout(attn)
        out = (attn @ v).transpose(1, 2).contiguous().view(B, T, self.d_model)  # (B, T, d_model)
        return self.o_proj(out)
