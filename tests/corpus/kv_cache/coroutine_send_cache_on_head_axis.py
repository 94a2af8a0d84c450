# attnprep: kv_cache
# expect: error
# diagnosis: cache_wrong_axis
"""A generator coroutine keeps the running cache: `_appender()` is primed with next() and fed new
(k, v) pairs with send(), returning the concatenated cache, the module creating one coroutine per
call from the cache it is given (it keeps no state). The coroutine concatenates on dim=1, the head
axis of (B, KV, T, D), instead of the token axis: the prefill is right, the first decode step has
twice the key heads and raises."""

import math

import torch
import torch.nn as nn


def _appender(k, v):
    while True:
        new = yield (k, v)
        if new is None:
            return
        k = torch.cat([k, new[0]], dim=1) if k is not None else new[0]
        v = torch.cat([v, new[1]], dim=1) if v is not None else new[1]


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
        q = self.q_proj(x).view(B, T, self.h, self.d).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.g, self.d).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.g, self.d).transpose(1, 2)
        acc = _appender(*(cache if cache is not None else (None, None)))
        next(acc)
        k, v = acc.send((k, v))
        acc.close()
        S = k.shape[2]
        rep = self.h // self.g
        kk, vv = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
        s = q @ kk.transpose(-1, -2) / math.sqrt(self.d)
        s = s.masked_fill(torch.ones(T, S, dtype=torch.bool, device=x.device).triu(S - T + 1), float("-inf"))
        return self.o_proj((s.softmax(-1) @ vv).transpose(1, 2).reshape(B, T, C)), (k, v)
# bug-line: 21, 22
