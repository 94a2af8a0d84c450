# attnprep: kv_cache
# expect: wrong_shape
# diagnosis: cache_not_returned
"""Walrus operators and conditional expressions: `if (past := cache) is not None`, `(k := torch.cat(...))`
inline, the causal bias from torch.triu on a float tensor of -inf. The attention of each call is
right for the cache it gets, but the function returns the cache it was given (`past`, None on the
prefill) instead of the updated one, so the next step starts from nothing."""

import math

import torch
import torch.nn as nn


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.h, self.g = num_heads, num_kv_heads
        self.hd = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.hd)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.hd)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, cache=None):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.h, self.hd).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.g, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.g, self.hd).transpose(1, 2)
        if (past := cache) is not None:
            k, v = (torch.cat([past[0], k], 2)), (torch.cat([past[1], v], 2))
        S = k.shape[2]
        rep = self.h // self.g
        s = q @ (kk := k.repeat_interleave(rep, 1)).transpose(-1, -2) / math.sqrt(self.hd)
        s = s + torch.full((T, S), float("-inf"), device=x.device).triu(S - T + 1)
        y = s.softmax(-1) @ v.repeat_interleave(rep, 1)
        return self.o_proj(y.transpose(1, 2).reshape(B, T, C)), past
# bug-line: 37
