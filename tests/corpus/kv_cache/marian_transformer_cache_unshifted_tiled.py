# attnprep: kv_cache
# expect: wrong_output
# diagnosis: cache_mask_not_offset + gqa_heads_tiled
"""Marian-NMT's transformer.h ported: `SplitHeads` / `JoinHeads`, `Attention(q, k, v, mask)`,
`DotProductAttention` with `scale = 1/sqrt(dimHead)`, the decoder state `prevKeys` / `prevValues`
appended by `concatenate(..., axis=-2)`. Grouped KV heads are widened with `.repeat(1, rep, 1, 1)`
(tiled, not grouped), and the triangle is tril(ones(T, S)) without the prefix length."""

import math

import torch
import torch.nn as nn


def SplitHeads(x, heads):
    B, T, C = x.shape
    return x.view(B, T, heads, C // heads).transpose(1, 2)


def JoinHeads(x):
    B, H, T, D = x.shape
    return x.transpose(1, 2).reshape(B, T, H * D)


def DotProductAttention(q, k, v, mask):
    dimHead = q.shape[-1]
    z = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(dimHead))
    z = z.masked_fill(~mask, float("-inf"))
    return torch.matmul(torch.softmax(z, dim=-1), v)


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.heads, self.kv_heads = num_heads, num_kv_heads
        dim_head = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * dim_head)
        self.v_proj = nn.Linear(d_model, num_kv_heads * dim_head)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, cache=None):
        q = SplitHeads(self.q_proj(x), self.heads)
        k = SplitHeads(self.k_proj(x), self.kv_heads)
        v = SplitHeads(self.v_proj(x), self.kv_heads)
        if cache is not None:
            prevKeys, prevValues = cache
            k = torch.cat([prevKeys, k], dim=-2)
            v = torch.cat([prevValues, v], dim=-2)
        state = (k, v)
        rep = self.heads // self.kv_heads
        k_all = k.repeat(1, rep, 1, 1)
        v_all = v.repeat(1, rep, 1, 1)
        T, S = q.shape[-2], k.shape[-2]
        mask = torch.tril(torch.ones(T, S, dtype=torch.bool, device=x.device))
        return self.o_proj(JoinHeads(DotProductAttention(q, k_all, v_all, mask))), state
# bug-line: 52, 53, 55
