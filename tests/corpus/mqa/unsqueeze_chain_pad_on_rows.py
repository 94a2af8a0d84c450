# attnprep: mqa
# expect: mask_leak
# diagnosis: padding_mask_on_queries
"""Masks prepared up front in forward, one per line, from unsqueeze chains; einsum for both
products with the single key / value head broadcast by the equation."""
import torch
import torch.nn as nn


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h, self.d = num_heads, d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, self.d)
        self.v_proj = nn.Linear(d_model, self.d)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        keep = torch.ones(1, 1, T, T, dtype=torch.bool, device=x.device)
        if is_causal:
            keep = keep.tril()
        if attention_mask is not None:
            pad = attention_mask.unsqueeze(1).unsqueeze(-1)
            keep = keep & pad
        q = self.q_proj(x).view(B, T, self.h, self.d)
        k, v = self.k_proj(x), self.v_proj(x)                       # (B, T, d) each
        s = torch.einsum("bqhd,bkd->bhqk", q, k) / self.d ** 0.5
        p = s.masked_fill(~keep, float("-inf")).softmax(-1)
        y = torch.einsum("bhqk,bkd->bqhd", p, v).reshape(B, T, C)
        return self.o_proj(y)
# bug-line: 25
