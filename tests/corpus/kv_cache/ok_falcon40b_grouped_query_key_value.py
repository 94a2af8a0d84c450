# attnprep: kv_cache
# expect: passed
"""Correct: Falcon-40B's grouped query_key_value (per kv group its query heads, its key, its value) with a (k, v) cache; kv heads broadcast over their group by expand."""
import math

import torch
import torch.nn as nn


class KVCacheAttention(nn.Module):
    """Falcon-40B's grouped query_key_value (per kv group: its query heads, key, value) with a cache."""

    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.num_heads, self.num_kv_heads = num_heads, num_kv_heads
        self.head_dim = d_model // num_heads
        self.query_key_value = nn.Linear(d_model, (num_heads + 2 * num_kv_heads) * self.head_dim)
        self.dense = nn.Linear(d_model, d_model)

    def forward(self, x, cache=None):
        B, T, C = x.shape
        g = self.num_heads // self.num_kv_heads
        qkv = self.query_key_value(x).view(B, T, self.num_kv_heads, g + 2, self.head_dim)
        q = qkv[:, :, :, :g].reshape(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        k = qkv[:, :, :, g].transpose(1, 2)                       # (B, Hkv, T, D)
        v = qkv[:, :, :, g + 1].transpose(1, 2)
        if cache is not None:
            k, v = torch.cat((cache[0], k), 2), torch.cat((cache[1], v), 2)
        S = k.shape[2]
        kk = k[:, :, None].expand(B, self.num_kv_heads, g, S, self.head_dim).reshape(B, self.num_heads, S, self.head_dim)
        vv = v[:, :, None].expand(B, self.num_kv_heads, g, S, self.head_dim).reshape(B, self.num_heads, S, self.head_dim)
        s = q @ kk.transpose(-1, -2) / math.sqrt(self.head_dim)
        qpos = torch.arange(S - T, S, device=x.device)[:, None]
        s = s.masked_fill(torch.arange(S, device=x.device)[None, :] > qpos, float("-inf"))
        o = (s.softmax(-1) @ vv).transpose(1, 2).reshape(B, T, C)
        return self.dense(o), (k, v)
