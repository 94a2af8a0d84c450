# attnprep: gqa
# expect: passed
"""Correct: KV heads chosen per query head with index_select on an index h // group, then bmm over (B*H, T, D)."""

import math

import torch
import torch.nn as nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.o_proj = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        H, G, D = self.num_heads, self.num_kv_heads, self.head_dim
        q = self.q_proj(x).view(B, T, H, D).transpose(1, 2)
        k = self.k_proj(x).view(B, T, G, D).transpose(1, 2)
        v = self.v_proj(x).view(B, T, G, D).transpose(1, 2)
        kv_index = torch.arange(H, device=x.device) // (H // G)   # [0, 0, 1, 1, ...]
        k = k.index_select(1, kv_index)
        v = v.index_select(1, kv_index)
        q, k, v = (t.reshape(B * H, T, D) for t in (q, k, v))
        s = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(D)
        s = s.view(B, H, T, T)
        if is_causal:
            s = s.masked_fill(~torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device)), float("-inf"))
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        p = self.dropout(torch.softmax(s, dim=-1)).view(B * H, T, T)
        o = torch.bmm(p, v).view(B, H, T, D).transpose(1, 2).reshape(B, T, C)
        return self.o_proj(o)
