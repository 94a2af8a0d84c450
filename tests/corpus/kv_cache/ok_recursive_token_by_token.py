# attnprep: kv_cache
# expect: passed
"""A chunk handled by recursion: forward with several new tokens calls itself on the first
token and then on the rest, so the attention itself only ever sees one query, which needs no
mask (a single new token may see every cached key); the prefill is the same recursion from an
empty cache. Results concatenated on the way back."""
import math

import torch
import torch.nn as nn


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.h, self.kvh, self.d = num_heads, num_kv_heads, d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.d)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.d)
        self.o_proj = nn.Linear(d_model, d_model)

    def step(self, x1, cache):
        B = x1.shape[0]
        q = self.q_proj(x1).view(B, self.h, 1, self.d)  # one token: (B, 1, H*D) -> (B, H, 1, D)
        k = self.k_proj(x1).view(B, self.kvh, 1, self.d)
        v = self.v_proj(x1).view(B, self.kvh, 1, self.d)
        if cache is not None:
            k = torch.cat([cache[0], k], dim=2)
            v = torch.cat([cache[1], v], dim=2)
        g = self.h // self.kvh
        qg = q.view(B, self.kvh, g, self.d)  # query heads grouped under their KV head
        w = torch.softmax(qg @ k.transpose(-1, -2) / math.sqrt(self.d), dim=-1)  # (B, KV, g, S)
        o = (w @ v).reshape(B, 1, self.h * self.d)
        return self.o_proj(o), (k, v)

    def forward(self, x, cache=None):
        if x.shape[1] == 1:
            return self.step(x, cache)
        first, cache = self.step(x[:, :1], cache)
        rest, cache = self.forward(x[:, 1:], cache)
        return torch.cat([first, rest], dim=1), cache
