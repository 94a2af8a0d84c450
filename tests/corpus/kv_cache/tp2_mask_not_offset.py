# attnprep: kv_cache
# expect: wrong_output
# diagnosis: cache_mask_not_offset
"""Buggy: the causal mask tril() of (T, S) not offset by the cached length. Otherwise correct: Column shards for q / k / v per simulated tensor-parallel rank (half the KV heads each), row
shards for o summed, one o bias; the cache is the ranks' K/V concatenated on the head axis."""
import math
import torch
import torch.nn as nn


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, tp=2):
        super().__init__()
        if num_kv_heads % tp:
            tp = 1
        self.tp, self.D = tp, d_model // num_heads
        self.h, self.kv = num_heads // tp, num_kv_heads // tp
        self.q = nn.ModuleList(nn.Linear(d_model, self.h * self.D) for _ in range(tp))
        self.k = nn.ModuleList(nn.Linear(d_model, self.kv * self.D) for _ in range(tp))
        self.v = nn.ModuleList(nn.Linear(d_model, self.kv * self.D) for _ in range(tp))
        self.o = nn.ModuleList(nn.Linear(self.h * self.D, d_model, bias=False) for _ in range(tp))
        self.o_bias = nn.Parameter(torch.zeros(d_model))

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        out, ks, vs = self.o_bias, [], []
        for r in range(self.tp):
            q = self.q[r](x).view(B, T, self.h, self.D).transpose(1, 2)
            k = self.k[r](x).view(B, T, self.kv, self.D).transpose(1, 2)
            v = self.v[r](x).view(B, T, self.kv, self.D).transpose(1, 2)
            if cache is not None:
                sl = slice(r * self.kv, (r + 1) * self.kv)
                k = torch.cat([cache[0][:, sl], k], 2)
                v = torch.cat([cache[1][:, sl], v], 2)
            ks.append(k)
            vs.append(v)
            S = k.shape[2]
            rep = self.h // self.kv
            s = q @ k.repeat_interleave(rep, 1).transpose(-1, -2) / math.sqrt(self.D)
            s = s.masked_fill(torch.ones(T, S, dtype=torch.bool, device=x.device).tril().logical_not(), float("-inf"))
            o = (s.softmax(-1) @ v.repeat_interleave(rep, 1)).transpose(1, 2).reshape(B, T, -1)
            out = out + self.o[r](o)
        return out, (torch.cat(ks, 1), torch.cat(vs, 1))
# bug-line: 40
