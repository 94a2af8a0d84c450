# attnprep: gqa
# expect: mask_leak
# diagnosis: masked_fill_discarded
"""masked_fill without assigning its result: neither mask is applied (the seed note's slip)."""

import math

import torch
import torch.nn as nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.h = num_heads
        self.g = num_kv_heads
        self.d = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.d)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.d)
        self.o_proj = nn.Linear(d_model, d_model)
        self.attn_drop = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        G, R, D = self.g, self.h // self.g, self.d

        # query head h = g * R + r belongs to group g
        q = self.q_proj(x).view(B, T, G, R, D).permute(0, 2, 3, 1, 4)  # (B, G, R, T, D)
        k = self.k_proj(x).view(B, T, G, D).transpose(1, 2)  # (B, G, T, D)
        v = self.v_proj(x).view(B, T, G, D).transpose(1, 2)  # (B, G, T, D)

        scores = torch.einsum("bgrqd,bgkd->bgrqk", q, k) / math.sqrt(D)  # (B, G, R, T, T)

        if is_causal:
            future = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), diagonal=1)
            scores.masked_fill(future, -1e9)  # the result is not assigned
        if attention_mask is not None:
            pad = ~attention_mask.bool()  # (B, T), True = padding
            scores.masked_fill(pad[:, None, None, None, :], -1e9)  # the result is not assigned

        attn = torch.softmax(scores, dim=-1)
        attn = self.attn_drop(attn)
        out = torch.einsum("bgrqk,bgkd->bqgrd", attn, v)  # (B, T, G, R, D)
        return self.o_proj(out.reshape(B, T, C))
