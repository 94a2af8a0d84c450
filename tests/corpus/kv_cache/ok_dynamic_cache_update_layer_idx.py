# attnprep: kv_cache
# expect: passed
"""Correct: a Hugging Face DynamicCache-like object rebuilt on every call from the tuple it is given
(`StepCache.from_legacy(cache).update(k, v)` returning the full keys and values, `to_legacy()`
giving the tuple back), `num_key_value_groups`, an additive float mask from torch.full(-inf).triu
with the past length as its diagonal offset, `torch.baddbmm`-free plain matmuls."""

import math

import torch
import torch.nn as nn


class StepCache:
    def __init__(self, keys=None, values=None):
        self.keys, self.values = keys, values

    @classmethod
    def from_legacy(cls, legacy):
        return cls() if legacy is None else cls(*legacy)

    def get_seq_length(self):
        return 0 if self.keys is None else self.keys.shape[-2]

    def update(self, k, v):
        if self.keys is None:
            self.keys, self.values = k, v
        else:
            self.keys = torch.cat([self.keys, k], dim=-2)
            self.values = torch.cat([self.values, v], dim=-2)
        return self.keys, self.values

    def to_legacy(self):
        return (self.keys, self.values)


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.num_heads, self.num_key_value_heads = num_heads, num_kv_heads
        self.num_key_value_groups = num_heads // num_kv_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, num_heads * self.head_dim)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.o_proj = nn.Linear(num_heads * self.head_dim, d_model)

    def forward(self, x, cache=None):
        bsz, q_len, _ = x.shape
        past = StepCache.from_legacy(cache)
        past_len = past.get_seq_length()
        q = self.q_proj(x).view(bsz, q_len, -1, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(bsz, q_len, -1, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(bsz, q_len, -1, self.head_dim).transpose(1, 2)
        k, v = past.update(k, v)
        kv_len = k.shape[-2]
        k = k.repeat_interleave(self.num_key_value_groups, dim=1)
        v = v.repeat_interleave(self.num_key_value_groups, dim=1)
        bias = torch.full((q_len, kv_len), float("-inf"), device=x.device, dtype=x.dtype).triu(past_len + 1)
        w = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim) + bias
        out = torch.matmul(w.softmax(-1), v).transpose(1, 2).reshape(bsz, q_len, -1)
        return self.o_proj(out), past.to_legacy()
