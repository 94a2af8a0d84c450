# attnprep: kv_cache
# expect: wrong_shape
# diagnosis: cache_not_returned
"""Prefill and decode written as two branches; the decode branch attends over the extended cache but
returns the cache it was given, so the next step never sees this token's key and value."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class KVCacheAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int):
        super().__init__()
        self.n_heads = num_heads
        self.n_kv = num_kv_heads
        self.hd = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.hd)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.hd)
        self.o_proj = nn.Linear(d_model, d_model)

    def _attend(self, q, k, v, offset):
        T, S = q.shape[2], k.shape[2]
        k = k.repeat_interleave(self.n_heads // self.n_kv, dim=1)
        v = v.repeat_interleave(self.n_heads // self.n_kv, dim=1)
        s = q @ k.transpose(-2, -1) / math.sqrt(self.hd)
        ok = torch.ones(T, S, dtype=torch.bool, device=q.device).tril(diagonal=offset)
        s = s.masked_fill(~ok, float("-inf"))
        return F.softmax(s, dim=-1) @ v

    def forward(self, x, cache=None):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.n_heads, self.hd).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.n_kv, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.n_kv, self.hd).transpose(1, 2)
        if cache is None:  # prefill
            out = self._attend(q, k, v, 0)
            return self.o_proj(out.transpose(1, 2).reshape(B, T, C)), (k, v)
        # decode
        k_all = torch.cat([cache[0], k], dim=2)
        v_all = torch.cat([cache[1], v], dim=2)
        out = self._attend(q, k_all, v_all, cache[0].shape[2])
        return self.o_proj(out.transpose(1, 2).reshape(B, T, C)), cache
# bug-line: 46
