# attnprep: kv_cache
# expect: wrong_output
# diagnosis: cache_mask_not_offset
"""Hungarian names and comments; the causal band of a chunk made by a small helper whose offset (the
cached length) is a default argument, the cache concatenated before the heads are repeated."""
import math

import torch
import torch.nn as nn


def lathato(T, S, eltolas=0, device=None):
    # a t-edik új token a 0 .. eltolas + t kulcsokat látja
    return torch.ones(T, S, dtype=torch.bool, device=device).tril(eltolas)


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.fejek, self.kv_fejek = num_heads, num_kv_heads
        self.fej_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.fej_dim)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.fej_dim)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, cache=None):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.fejek, self.fej_dim).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.kv_fejek, self.fej_dim).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.kv_fejek, self.fej_dim).transpose(1, 2)
        if cache is not None:
            k = torch.cat([cache[0], k], dim=2)
            v = torch.cat([cache[1], v], dim=2)
        S = k.shape[2]
        csoport = self.fejek // self.kv_fejek
        kk, vv = k.repeat_interleave(csoport, dim=1), v.repeat_interleave(csoport, dim=1)
        pont = q @ kk.transpose(-2, -1) / math.sqrt(self.fej_dim)
        maszk = lathato(T, S, device=x.device)
        pont = pont.masked_fill(~maszk, float("-inf"))
        ki = (pont.softmax(dim=-1) @ vv).transpose(1, 2).reshape(B, T, C)
        return self.o_proj(ki), (k, v)
# bug-line: 39
