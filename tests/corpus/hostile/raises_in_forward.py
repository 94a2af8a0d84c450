# attnprep: mha
# expect: error
"""An MHA computing the heads in a Python loop with an off-by-one range(1, H + 1): IndexError in forward."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        assert d_model % num_heads == 0
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
        q = self.q_proj(x).view(B, T, H, D)
        k = self.k_proj(x).view(B, T, H, D)
        v = self.v_proj(x).view(B, T, H, D)

        allowed = torch.ones(B, T, T, dtype=torch.bool, device=x.device)
        if is_causal:
            allowed = allowed & torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device))
        if attention_mask is not None:
            allowed = allowed & attention_mask[:, None, :]

        heads = []
        for h in range(1, H + 1):  # heads 1..H
            qh, kh, vh = q[:, :, h], k[:, :, h], v[:, :, h]  # (B, T, D)
            scores = qh @ kh.transpose(1, 2) / math.sqrt(D)  # (B, T, T)
            scores = scores.masked_fill(~allowed, float("-inf"))
            heads.append(self.dropout(scores.softmax(dim=-1)) @ vh)
        out = torch.cat(heads, dim=-1)  # (B, T, C)
        return self.o_proj(out)
