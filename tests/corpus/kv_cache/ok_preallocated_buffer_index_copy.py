# attnprep: kv_cache
# expect: passed
"""Correct, a static-cache habit (gpt-fast / mistral-inference's BufferCache): the grown cache is a
new buffer from new_zeros, the old entries and the new ones written into it with index_copy along
the token axis (no in-place change of the cache passed in), the KV heads grouped by a view of the
queries (B, KV, H/KV, T, D) instead of any repeat, the offset causal mask from F.pad of a tril."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.h, self.kv = num_heads, num_kv_heads
        self.d = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, num_kv_heads * self.d)
        self.wv = nn.Linear(d_model, num_kv_heads * self.d)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, x, cache=None):
        B, T, C = x.shape
        H, KV, D = self.h, self.kv, self.d
        q = self.wq(x).view(B, T, KV, H // KV, D).permute(0, 2, 3, 1, 4)  # (B, KV, R, T, D)
        k_new = self.wk(x).view(B, T, KV, D).transpose(1, 2)
        v_new = self.wv(x).view(B, T, KV, D).transpose(1, 2)
        past = 0 if cache is None else cache[0].shape[2]
        S = past + T
        k = k_new.new_zeros(B, KV, S, D)
        v = v_new.new_zeros(B, KV, S, D)
        if cache is not None:
            old = torch.arange(past, device=x.device)
            k = k.index_copy(2, old, cache[0])
            v = v.index_copy(2, old, cache[1])
        new = torch.arange(past, S, device=x.device)
        k = k.index_copy(2, new, k_new)
        v = v.index_copy(2, new, v_new)
        scores = q @ k.unsqueeze(2).transpose(-1, -2) / math.sqrt(D)  # (B, KV, R, T, S)
        allowed = F.pad(torch.ones(T, T, dtype=torch.bool, device=x.device).tril(), (past, 0), value=True)
        scores = scores.masked_fill(~allowed, float("-inf"))
        out = scores.softmax(-1) @ v.unsqueeze(2)  # (B, KV, R, T, D)
        out = out.reshape(B, H, T, D).transpose(1, 2).reshape(B, T, C)
        return self.wo(out), (k, v)
