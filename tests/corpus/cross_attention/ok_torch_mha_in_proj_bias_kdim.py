# attnprep: cross_attention
# expect: passed
"""Correct: nn.MultiheadAttention's own parameters when kdim != embed_dim, written by hand: q_proj_weight, k_proj_weight, v_proj_weight, one in_proj_bias of 3 * d_model chunked in that order, out_proj."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class CrossAttention(nn.Module):
    """nn.MultiheadAttention's own parameters when kdim != embed_dim, written by hand:
    q_proj_weight, k_proj_weight, v_proj_weight, one in_proj_bias of 3 * d_model, out_proj."""

    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        kdim = d_context if d_context is not None else d_model
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.dropout = dropout
        self.q_proj_weight = nn.Parameter(torch.empty(d_model, d_model))
        self.k_proj_weight = nn.Parameter(torch.empty(d_model, kdim))
        self.v_proj_weight = nn.Parameter(torch.empty(d_model, kdim))
        self.in_proj_bias = nn.Parameter(torch.zeros(3 * d_model))
        self.out_proj = nn.Linear(d_model, d_model)
        for w in (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
            nn.init.xavier_uniform_(w)

    def forward(self, x, context, context_mask=None):
        B, T, E = x.shape
        S = context.shape[1]
        b_q, b_k, b_v = self.in_proj_bias.chunk(3)
        q = F.linear(x, self.q_proj_weight, b_q).view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        k = F.linear(context, self.k_proj_weight, b_k).view(B, S, self.num_heads, self.head_dim).transpose(1, 2)
        v = F.linear(context, self.v_proj_weight, b_v).view(B, S, self.num_heads, self.head_dim).transpose(1, 2)
        w = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
        if context_mask is not None:
            w = w.masked_fill(~context_mask[:, None, None, :], float("-inf"))
        w = F.dropout(w.softmax(-1), self.dropout, self.training)
        return self.out_proj((w @ v).transpose(1, 2).reshape(B, T, E))
