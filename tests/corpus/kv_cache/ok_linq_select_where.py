# attnprep: kv_cache
# expect: passed
"""C# LINQ habits: a tiny Query wrapper with Select / Where / Aggregate / ToList over the
projections, and Aggregate folding the cache's past chunks onto the new one."""
import math

import torch
import torch.nn as nn


class Query:
    def __init__(self, items):
        self.items = list(items)

    def Select(self, fn):
        return Query(fn(i) for i in self.items)

    def Where(self, pred):
        return Query(i for i in self.items if pred(i))

    def Aggregate(self, seed, fn):
        acc = seed
        for i in self.items:
            acc = fn(acc, i)
        return acc

    def ToList(self):
        return list(self.items)


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.NumHeads = num_heads
        self.NumKvHeads = num_kv_heads
        self.HeadDim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.HeadDim)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.HeadDim)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, cache=None):
        B, T, C = x.shape
        H, G, D = self.NumHeads, self.NumKvHeads, self.HeadDim
        q, k, v = (Query([(self.q_proj, H), (self.k_proj, G), (self.v_proj, G)])
                   .Select(lambda p: p[0](x).view(B, T, p[1], D).transpose(1, 2))
                   .ToList())
        if cache is not None:
            k = Query([cache[0]]).Where(lambda t: t.shape[2] > 0).Aggregate(k, lambda acc, past: torch.cat([past, acc], 2))
            v = Query([cache[1]]).Where(lambda t: t.shape[2] > 0).Aggregate(v, lambda acc, past: torch.cat([past, acc], 2))
        S = k.shape[2]
        kk, vv = Query([k, v]).Select(lambda t: t.repeat_interleave(H // G, dim=1)).ToList()
        scores = q @ kk.transpose(-2, -1) / math.sqrt(D)
        allowed = torch.ones(T, S, dtype=torch.bool, device=x.device).tril(S - T)
        scores = scores.masked_fill(~allowed, float("-inf"))
        out = (scores.softmax(-1) @ vv).transpose(1, 2).reshape(B, T, C)
        return self.o_proj(out), (k, v)
