# attnprep: kv_cache
# expect: error
# diagnosis: cache_in_module_state
# A cache kept in self: right for one sequence, wrong as soon as a second one runs in between.
import math

import torch
import torch.nn as nn


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.h, self.g, self.d = num_heads, num_kv_heads, d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.d)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.d)
        self.o_proj = nn.Linear(d_model, d_model)
        self.k_cache = None
        self.v_cache = None

    def forward(self, x, cache=None):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.h, self.d).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.g, self.d).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.g, self.d).transpose(1, 2)
        if cache is None:  # a new prompt
            self.k_cache, self.v_cache = k, v
        else:
            self.k_cache = torch.cat([self.k_cache, k], dim=2)
            self.v_cache = torch.cat([self.v_cache, v], dim=2)
        k, v = self.k_cache, self.v_cache
        S = k.shape[2]
        kr = k.repeat_interleave(self.h // self.g, dim=1)
        vr = v.repeat_interleave(self.h // self.g, dim=1)
        scores = q @ kr.transpose(-2, -1) / math.sqrt(self.d)
        mask = torch.tril(torch.ones(T, S, dtype=torch.bool, device=x.device), diagonal=S - T)
        attn = scores.masked_fill(~mask, float("-inf")).softmax(-1)
        out = (attn @ vr).transpose(1, 2).reshape(B, T, C)
        return self.o_proj(out), (k, v)
