# attnprep: kv_cache
# expect: wrong_output
# diagnosis: cache_mask_not_offset
"""Buggy: the causal mask of a chunk not offset by the cached length (tril(0)); a Flax port with a cache: kernels query (d_model, H, D), key / value (d_model, KV, D) with
(H, D) / (KV, D) biases, output (H, D, d_model) + bias; the cache in (B, KV, T, D) as the contract wants."""
import math
import torch
import torch.nn as nn


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        H, KV, D = num_heads, num_kv_heads, d_model // num_heads
        self.H, self.KV, self.D = H, KV, D
        init = lambda *s: nn.Parameter(torch.randn(*s) * 0.02)  # noqa: E731
        self.query_kernel, self.query_bias = init(d_model, H, D), nn.Parameter(torch.zeros(H, D))
        self.key_kernel, self.key_bias = init(d_model, KV, D), nn.Parameter(torch.zeros(KV, D))
        self.value_kernel, self.value_bias = init(d_model, KV, D), nn.Parameter(torch.zeros(KV, D))
        self.out_kernel, self.out_bias = init(H, D, d_model), nn.Parameter(torch.zeros(d_model))

    def forward(self, x, cache=None):
        B, T, C = x.shape
        q = (torch.einsum("btc,chd->bthd", x, self.query_kernel) + self.query_bias).transpose(1, 2)
        k = (torch.einsum("btc,chd->bthd", x, self.key_kernel) + self.key_bias).transpose(1, 2)
        v = (torch.einsum("btc,chd->bthd", x, self.value_kernel) + self.value_bias).transpose(1, 2)
        if cache is not None:
            k, v = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2)
        S = k.shape[2]
        g = self.H // self.KV
        s = q @ k.repeat_interleave(g, 1).transpose(-1, -2) / math.sqrt(self.D)
        s = s.masked_fill(torch.ones(T, S, dtype=torch.bool, device=x.device).tril(0).logical_not(), float("-inf"))
        o = (s.softmax(-1) @ v.repeat_interleave(g, 1)).transpose(1, 2)
        return torch.einsum("bthd,hdc->btc", o, self.out_kernel) + self.out_bias, (k, v)
# bug-line: 32
