# attnprep: gqa
# expect: passed
"""Correct: queries viewed (B, T, KV, G, D) and einsum'd against (B, S, KV, D) keys with odd subscripts."""
import math
import torch
import torch.nn as nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.H, self.KV = num_heads, num_kv_heads
        self.D = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.D)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.D)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        G = self.H // self.KV
        q = self.q_proj(x).view(B, T, self.KV, G, self.D)
        k = self.k_proj(x).view(B, T, self.KV, self.D)
        v = self.v_proj(x).view(B, T, self.KV, self.D)
        w = torch.einsum("znkgd,zmkd->zkgnm", q, k) / math.sqrt(self.D)   # (B, KV, G, T, S)
        if attention_mask is not None:
            w = w.masked_fill(~attention_mask[:, None, None, None, :], float("-inf"))
        if is_causal:
            w = w.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        w = w.softmax(-1)
        y = torch.einsum("zkgnm,zmkd->znkgd", w, v).reshape(B, T, C)
        return self.o_proj(y)
