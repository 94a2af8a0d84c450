# attnprep: kv_cache
# expect: mask_leak
# diagnosis: cache_chunk_unmasked
"""'A decode step is one token and sees everything': the causal mask is built only when there is no
cache. Prefill and one-token steps are right; a chunk of several new tokens after a cache is not."""
import math
import torch
from torch import nn


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.nh, self.nkv, self.hd = num_heads, num_kv_heads, d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, self.nkv * self.hd)
        self.v_proj = nn.Linear(d_model, self.nkv * self.hd)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, cache=None):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.nh, self.hd).permute(0, 2, 1, 3)
        k = self.k_proj(x).view(B, T, self.nkv, self.hd).permute(0, 2, 1, 3)
        v = self.v_proj(x).view(B, T, self.nkv, self.hd).permute(0, 2, 1, 3)
        if cache is not None:
            k = torch.cat((cache[0], k), dim=-2)
            v = torch.cat((cache[1], v), dim=-2)
        new_cache = (k, v)
        k = torch.repeat_interleave(k, self.nh // self.nkv, dim=1)
        v = torch.repeat_interleave(v, self.nh // self.nkv, dim=1)
        att = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.hd)
        if cache is None:
            future = torch.ones(T, T, device=x.device, dtype=torch.bool).triu(diagonal=1)
            att.masked_fill_(future, float("-inf"))
        y = torch.matmul(att.softmax(dim=-1), v)
        y = y.permute(0, 2, 1, 3).reshape(B, T, C)
        return self.o_proj(y), new_cache
# bug-line: 32
