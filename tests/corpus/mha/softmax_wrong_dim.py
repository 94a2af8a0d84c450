# attnprep: mha
# expect: wrong_output
# diagnosis: softmax_wrong_dim
"""Softmax over the query axis (dim=-2) of the (B, H, T, T) scores."""

import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.scale = self.head_dim ** -0.5
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.attn_dropout = nn.Dropout(dropout)

    def _split(self, t):
        B, T, _ = t.shape
        return t.view(B, T, self.num_heads, self.head_dim).transpose(1, 2)  # (B, H, T, D)

    def _merge(self, t):
        B, H, T, D = t.shape
        return t.transpose(1, 2).reshape(B, T, H * D)  # (B, T, C)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q = self._split(self.q_proj(x))
        k = self._split(self.k_proj(x))
        v = self._split(self.v_proj(x))

        scores = (q @ k.transpose(-2, -1)) * self.scale  # (B, H, T, T)

        # one boolean mask, True = may attend
        allowed = torch.ones(T, T, dtype=torch.bool, device=x.device)
        if is_causal:
            allowed = allowed.tril()
        allowed = allowed[None, None]  # (1, 1, T, T)
        if attention_mask is not None:
            allowed = allowed & attention_mask[:, None, None, :]  # (B, 1, T, T)
        scores = scores.masked_fill(~allowed, -1e9)

        attn = scores.softmax(dim=-2)
        attn = self.attn_dropout(attn)
        return self.o_proj(self._merge(attn @ v))
