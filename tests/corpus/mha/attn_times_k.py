# attnprep: mha
# expect: wrong_output
# diagnosis: attn_times_k
"""Additive -inf mask and unflatten/flatten, but the output mixes the keys: attn @ k."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.dropout = dropout
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q = self.q_proj(x).unflatten(-1, (self.num_heads, self.head_dim)).transpose(1, 2)  # (B, H, T, D)
        k = self.k_proj(x).unflatten(-1, (self.num_heads, self.head_dim)).transpose(1, 2)
        v = self.v_proj(x).unflatten(-1, (self.num_heads, self.head_dim)).transpose(1, 2)

        # additive float mask: 0 where allowed, -inf where not
        bias = torch.zeros(B, 1, T, T, dtype=x.dtype, device=x.device)
        if is_causal:
            keep = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
            bias = torch.where(keep, bias, float("-inf"))
        if attention_mask is not None:
            bias = torch.where(attention_mask[:, None, None, :], bias, float("-inf"))

        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim) + bias
        attn = F.softmax(scores, dim=-1)
        attn = F.dropout(attn, p=self.dropout, training=self.training)
        out = (attn @ k).transpose(1, 2).flatten(2)  # (B, T, C)
        return self.o_proj(out)
