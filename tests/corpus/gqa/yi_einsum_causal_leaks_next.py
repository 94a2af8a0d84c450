# attnprep: gqa
# expect: mask_leak
# diagnosis: causal_leaks_next
"""Yi / Llama modeling code with einsum everywhere and the groups as an explicit axis ('bgrqd,bgkd');
the causal mask is built with triu(diagonal=2): every query also sees the next token."""

import math

import torch
import torch.nn as nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.num_key_value_heads = num_kv_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        G, D = self.num_key_value_heads, self.head_dim
        R = self.num_heads // G
        q = self.q_proj(x).view(B, T, G, R, D)
        k = self.k_proj(x).view(B, T, G, D)
        v = self.v_proj(x).view(B, T, G, D)
        s = torch.einsum("bqgrd,bkgd->bgrqk", q, k) / math.sqrt(D)
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask[:, None, None, None, :], float("-inf"))
        if is_causal:
            blocked = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(diagonal=2)
            s = s.masked_fill(blocked, float("-inf"))
        p = s.softmax(dim=-1)
        o = torch.einsum("bgrqk,bkgd->bqgrd", p, v).reshape(B, T, -1)
        return self.o_proj(o)
# bug-line: 35
