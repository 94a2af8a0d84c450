# attnprep: kv_cache
# expect: wrong_shape
# diagnosis: cache_layout
"""A `__slots__` class `KV` for the cache entry (keys, values, length) with `append()`, the attention
computed by a function taking the entry; heads kept as (B, T, H_kv, D) the way the projection
gives them, so the cache is stored and returned tokens-first, (B, T, num_kv_heads, head_dim),
where the contract's cache is (B, num_kv_heads, T, head_dim)."""

import math

import torch
import torch.nn as nn


class KV:
    __slots__ = ("keys", "values")

    def __init__(self, keys, values):
        self.keys, self.values = keys, values

    def append(self, k, v):
        return KV(torch.cat([self.keys, k], dim=1), torch.cat([self.values, v], dim=1))


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.h, self.g, self.d = num_heads, num_kv_heads, d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.d)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.d)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, cache=None):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.h, self.d)
        k = self.k_proj(x).view(B, T, self.g, self.d)
        v = self.v_proj(x).view(B, T, self.g, self.d)
        entry = KV(k, v) if cache is None else KV(*cache).append(k, v)
        S = entry.keys.shape[1]
        kk = entry.keys.repeat_interleave(self.h // self.g, dim=2)
        vv = entry.values.repeat_interleave(self.h // self.g, dim=2)
        s = torch.einsum("bthd,bshd->bhts", q, kk) / math.sqrt(self.d)
        keep = torch.arange(S, device=x.device)[None, :] <= torch.arange(S - T, S, device=x.device)[:, None]
        p = s.masked_fill(~keep, float("-inf")).softmax(-1)
        out = torch.einsum("bhts,bshd->bthd", p, vv).reshape(B, T, C)
        return self.o_proj(out), (entry.keys, entry.values)
# bug-line: 47
