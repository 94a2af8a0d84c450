# attnprep: kv_cache
# expect: wrong_output
# diagnosis: cache_mask_not_offset + cache_prepended
"""Llama-ish with a tuple cache: the new keys go in front of the old (torch.cat([k, past_k])), and the
chunk's causal mask is tril(ones(T, S)) without the T_past offset."""

import math

import torch
import torch.nn as nn


class KVCacheAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int):
        super().__init__()
        self.n_heads, self.n_kv_heads = num_heads, num_kv_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, cache=None):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.n_kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.n_kv_heads, self.head_dim).transpose(1, 2)
        if cache is not None:
            k = torch.cat([k, cache[0]], dim=2)
            v = torch.cat([v, cache[1]], dim=2)
        S = k.shape[2]
        rep = self.n_heads // self.n_kv_heads
        kk = k.repeat_interleave(rep, dim=1)
        vv = v.repeat_interleave(rep, dim=1)
        scores = q @ kk.transpose(2, 3) / math.sqrt(self.head_dim)
        mask = torch.ones(T, S, dtype=torch.bool, device=x.device).tril()
        scores = scores.masked_fill(~mask, float("-inf"))
        out = (scores.softmax(-1) @ vv).transpose(1, 2).reshape(B, T, C)
        return self.o_proj(out), (k, v)
