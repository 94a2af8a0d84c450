# attnprep: kv_cache
# expect: passed
"""The cache as the contract's tensors, the new keys kept apart until read: a small CacheView
holds (past, new) chunks and concatenates on `.full()`, the mask offset by the past length read from
the view; GQA by expand + reshape."""
import math

import torch
import torch.nn as nn


class CacheView:
    def __init__(self, past, new):
        self.past, self.new = past, new

    @property
    def past_len(self):
        return 0 if self.past is None else self.past.shape[2]

    def full(self):
        return self.new if self.past is None else torch.cat([self.past, self.new], dim=2)


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.h, self.kv, self.d = num_heads, num_kv_heads, d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.d)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.d)
        self.o_proj = nn.Linear(d_model, d_model)

    def _expand(self, t):
        B, G, S, D = t.shape
        return t[:, :, None].expand(B, G, self.h // G, S, D).reshape(B, self.h, S, D)

    def forward(self, x, cache=None):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.h, self.d).transpose(1, 2)
        k_new = self.k_proj(x).view(B, T, self.kv, self.d).transpose(1, 2)
        v_new = self.v_proj(x).view(B, T, self.kv, self.d).transpose(1, 2)
        kview = CacheView(None if cache is None else cache[0], k_new)
        vview = CacheView(None if cache is None else cache[1], v_new)
        k, v = kview.full(), vview.full()
        S, past = k.shape[2], kview.past_len
        scores = q @ self._expand(k).transpose(-1, -2) / math.sqrt(self.d)
        qpos = past + torch.arange(T, device=x.device)
        kpos = torch.arange(S, device=x.device)
        scores = scores.masked_fill(kpos[None, :] > qpos[:, None], float("-inf"))
        out = (scores.softmax(-1) @ self._expand(v)).transpose(1, 2).reshape(B, T, C)
        return self.o_proj(out), (k, v)
