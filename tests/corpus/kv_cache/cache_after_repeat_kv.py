# attnprep: kv_cache
# expect: structure
# diagnosis: cache_after_repeat_kv
# Right numbers, an MHA-sized cache: the keys and values are cached after repeat_interleave.
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

    def forward(self, x, cache=None):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.h, self.d).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.g, self.d).transpose(1, 2).repeat_interleave(self.h // self.g, dim=1)
        v = self.v_proj(x).view(B, T, self.g, self.d).transpose(1, 2).repeat_interleave(self.h // self.g, dim=1)
        if cache is not None:
            k = torch.cat([cache[0], k], dim=2)
            v = torch.cat([cache[1], v], dim=2)
        S = k.shape[2]
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d)
        mask = torch.tril(torch.ones(T, S, dtype=torch.bool, device=x.device), diagonal=S - T)
        attn = scores.masked_fill(~mask, float("-inf")).softmax(-1)
        out = (attn @ v).transpose(1, 2).reshape(B, T, C)
        return self.o_proj(out), (k, v)
