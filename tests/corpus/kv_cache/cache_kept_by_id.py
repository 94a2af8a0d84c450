# attnprep: kv_cache
# expect: wrong_shape
# The cache is returned, but never read back: the keys and values stay in a module-level dict, found
# again by the id of the tensor the previous call returned (nothing found: the prefix is dropped).
import math

import torch
import torch.nn as nn

_STORE = {}  # id(cache[0]) -> (k, v) of every token so far


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
        if cache is not None:  # the keys and values kept here, found by the id of what was returned
            past_k, past_v = _STORE.get(id(cache[0]), (k[:, :, :0], v[:, :, :0]))
            k = torch.cat([past_k, k], dim=2)
            v = torch.cat([past_v, v], dim=2)
        S = k.shape[2]
        _STORE[id(k)] = (k, v)
        kr = k.repeat_interleave(self.h // self.g, dim=1)
        vr = v.repeat_interleave(self.h // self.g, dim=1)
        scores = q @ kr.transpose(-2, -1) / math.sqrt(self.d)
        mask = torch.tril(torch.ones(T, S, dtype=torch.bool, device=x.device), diagonal=S - T)
        attn = scores.masked_fill(~mask, float("-inf")).softmax(-1)
        out = (attn @ vr).transpose(1, 2).reshape(B, T, C)
        return self.o_proj(out), (k, v)
