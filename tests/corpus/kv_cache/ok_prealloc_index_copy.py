# attnprep: kv_cache
# expect: passed
"""Correct: each call preallocates the (B, KV, T_past + T, D) buffers with new_empty, copies the old
cache and the new keys in with index_copy_, and returns the buffers; mask from arange comparisons."""
import math
import torch
import torch.nn as nn


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.h, self.kv, self.d = num_heads, num_kv_heads, d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.d)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.d)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, cache=None):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.h, self.d).transpose(1, 2)
        k_new = self.k_proj(x).view(B, T, self.kv, self.d).transpose(1, 2)
        v_new = self.v_proj(x).view(B, T, self.kv, self.d).transpose(1, 2)
        past = 0 if cache is None else cache[0].shape[2]
        S = past + T
        k = k_new.new_empty(B, self.kv, S, self.d)
        v = v_new.new_empty(B, self.kv, S, self.d)
        if past:
            old = torch.arange(past, device=x.device)
            k.index_copy_(2, old, cache[0])
            v.index_copy_(2, old, cache[1])
        new = torch.arange(past, S, device=x.device)
        k.index_copy_(2, new, k_new)
        v.index_copy_(2, new, v_new)
        g = self.h // self.kv
        kr, vr = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
        s = q @ kr.transpose(-1, -2) / math.sqrt(self.d)
        qpos = torch.arange(past, S, device=x.device)[:, None]
        kpos = torch.arange(S, device=x.device)[None, :]
        s = s.masked_fill(kpos > qpos, float("-inf"))
        o = (s.softmax(-1) @ vr).transpose(1, 2).reshape(B, T, C)
        return self.o_proj(o), (k, v)
