# attnprep: kv_cache
# expect: passed
"""Correct: keys and values from one Linear(d_model, 2·KV·D) whose rows are per kv head [k_g; v_g]
(viewed (B, T, KV, 2·D) and chunked), the cache appended with torch.cat, GQA by repeat_interleave."""
import math
import torch
import torch.nn as nn


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.H, self.KV, self.D = num_heads, num_kv_heads, d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.kv_proj = nn.Linear(d_model, 2 * num_kv_heads * self.D)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, cache=None):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.H, self.D).transpose(1, 2)
        k, v = self.kv_proj(x).view(B, T, self.KV, 2 * self.D).transpose(1, 2).chunk(2, dim=-1)
        if cache is not None:
            k, v = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2)
        new_cache = (k, v)
        S = k.shape[2]
        k, v = k.repeat_interleave(self.H // self.KV, 1), v.repeat_interleave(self.H // self.KV, 1)
        s = q @ k.transpose(-1, -2) / math.sqrt(self.D)
        s = s.masked_fill(torch.ones(T, S, dtype=torch.bool, device=x.device).tril(S - T).logical_not(), float("-inf"))
        return self.o_proj((s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C)), new_cache
