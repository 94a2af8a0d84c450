# attnprep: mha
# expect: mask_leak
# diagnosis: causal_leaks_next
"""Heads kept merged as (B, T, H*D) and sliced per head in a loop; causal mask off by one."""

import math

import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
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
        q = self.q_proj(x)
        k = self.k_proj(x)
        v = self.v_proj(x)
        heads = []
        for h in range(H):
            qh = q[:, :, h * D:(h + 1) * D]
            kh = k[:, :, h * D:(h + 1) * D]
            vh = v[:, :, h * D:(h + 1) * D]
            scores = qh @ kh.transpose(-2, -1) / math.sqrt(D)
            if is_causal:
                allowed = torch.ones(T, T, dtype=torch.bool, device=x.device).tril(1)
                scores = scores.masked_fill(~allowed, float("-inf"))
            if attention_mask is not None:
                scores = scores.masked_fill(~attention_mask[:, None, :], float("-inf"))
            attn = scores.softmax(dim=-1)
            attn = self.dropout(attn)
            heads.append(attn @ vh)
        out = torch.cat(heads, dim=-1)
        return self.o_proj(out)
