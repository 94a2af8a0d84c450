# attnprep: kv_cache
# expect: wrong_output
# diagnosis: cache_mask_not_offset
"""contextlib.nullcontext as a placeholder for an optional profiler range (`with self.scope("attn")`),
each stage in its own with-block; the causal mask over (new, all) keys was built without the
cache's offset, so a decoded token sees only the first keys."""
import contextlib
import math

import torch
import torch.nn as nn


class KVCacheAttention(nn.Module):
    profile = False

    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.o_proj = nn.Linear(d_model, d_model)

    def scope(self, name):
        if self.profile:
            return torch.profiler.record_function(name)
        return contextlib.nullcontext()

    def forward(self, x, cache=None):
        B, T, C = x.shape
        H, G, D = self.num_heads, self.num_kv_heads, self.head_dim
        with self.scope("project"):
            q = self.q_proj(x).view(B, T, H, D).transpose(1, 2)
            k = self.k_proj(x).view(B, T, G, D).transpose(1, 2)
            v = self.v_proj(x).view(B, T, G, D).transpose(1, 2)
        with self.scope("cache"):
            if cache is not None:
                k = torch.cat((cache[0], k), dim=-2)
                v = torch.cat((cache[1], v), dim=-2)
            new_cache = (k, v)
        S = k.shape[-2]
        with self.scope("attend"):
            k = k.repeat_interleave(H // G, dim=1)
            v = v.repeat_interleave(H // G, dim=1)
            scores = q @ k.transpose(-2, -1) / math.sqrt(D)
            allowed = torch.ones(T, S, dtype=torch.bool, device=x.device).tril()
            scores = scores.masked_fill(~allowed, float("-inf"))
            out = scores.softmax(dim=-1) @ v
        with self.scope("merge"):
            out = self.o_proj(out.transpose(1, 2).reshape(B, T, C))
        return out, new_cache
# bug-line: 49
