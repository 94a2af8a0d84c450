# attnprep: kv_cache
# expect: passed
# Gemma's JAX kernels: q_einsum (H, d_model, D), kv_einsum (2, KV, d_model, D), attn_vec_einsum
# (H, D, d_model); the cache (k, v) in (B, KV, T, D); only the new tokens projected.
import math
import torch
import torch.nn as nn


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.H, self.KV, self.D = num_heads, num_kv_heads, d_model // num_heads
        self.q_einsum = nn.Parameter(torch.randn(num_heads, d_model, self.D) / math.sqrt(d_model))
        self.kv_einsum = nn.Parameter(torch.randn(2, num_kv_heads, d_model, self.D) / math.sqrt(d_model))
        self.attn_vec_einsum = nn.Parameter(torch.randn(num_heads, self.D, d_model) / math.sqrt(d_model))

    def forward(self, x, cache=None):
        B, T, C = x.shape
        q = torch.einsum("btc,hcd->bhtd", x, self.q_einsum)
        k, v = torch.einsum("btc,skcd->sbktd", x, self.kv_einsum).unbind(0)  # (B, KV, T, D)
        if cache is not None:
            k, v = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2)
        S = k.shape[2]
        g = self.H // self.KV
        kk, vv = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
        s = q @ kk.transpose(-1, -2) / math.sqrt(self.D)
        s = s.masked_fill(~torch.ones(T, S, dtype=torch.bool, device=x.device).tril(S - T), float("-inf"))
        o = s.softmax(-1) @ vv  # (B, H, T, D)
        return torch.einsum("bhtd,hdc->btc", o, self.attn_vec_einsum), (k, v)
