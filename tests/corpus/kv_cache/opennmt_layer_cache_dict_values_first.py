# attnprep: kv_cache
# expect: wrong_output
# diagnosis: cache_kv_swapped
"""OpenNMT-py's decoder self-attention cache: a `layer_cache` dict with "self_keys" /
"self_values" entries filled by `torch.cat((layer_cache["self_keys"], key), dim=2)`, the helper
closures `shape()` / `unshape()`, `query /= sqrt(dim_per_head)`. The cache goes out as a tuple built
from the dict's values in insertion order, and the dict was filled values first."""

import math

import torch
import torch.nn as nn


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.head_count, self.kv_heads = num_heads, num_kv_heads
        self.dim_per_head = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.dim_per_head)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.dim_per_head)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, cache=None):
        batch_size, step_len, _ = x.size()
        dim_per_head = self.dim_per_head

        def shape(t, heads):
            return t.view(batch_size, -1, heads, dim_per_head).transpose(1, 2)

        def unshape(t):
            return t.transpose(1, 2).contiguous().view(batch_size, -1, self.head_count * dim_per_head)

        query = shape(self.q_proj(x), self.head_count)
        key = shape(self.k_proj(x), self.kv_heads)
        value = shape(self.v_proj(x), self.kv_heads)
        layer_cache = {}
        if cache is not None:
            layer_cache["self_values"] = torch.cat((cache[1], value), dim=2)
            layer_cache["self_keys"] = torch.cat((cache[0], key), dim=2)
        else:
            layer_cache["self_values"] = value
            layer_cache["self_keys"] = key
        key, value = layer_cache["self_keys"], layer_cache["self_values"]
        key_len = key.size(2)
        rep = self.head_count // self.kv_heads
        key = key.repeat_interleave(rep, dim=1)
        value = value.repeat_interleave(rep, dim=1)

        query = query / math.sqrt(dim_per_head)
        scores = torch.matmul(query, key.transpose(2, 3))
        future = torch.ones(step_len, key_len, dtype=torch.bool, device=x.device).triu(key_len - step_len + 1)
        scores = scores.masked_fill(future, -1e18)
        attn = torch.softmax(scores, dim=-1)
        context = unshape(torch.matmul(attn, value))
        return self.o_proj(context), tuple(layer_cache.values())
# bug-line: 57
