# attnprep: kv_cache
# expect: wrong_output
# diagnosis: scale_by_dim
"""Derived numbers as functools.cached_property on the module (head_dim, n_rep, softmax_scale), read
once into locals at the top of forward, the cache concatenated on the sequence axis."""
import functools

import torch
import torch.nn as nn


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.d_model, self.num_heads, self.num_kv_heads = d_model, num_heads, num_kv_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * (d_model // num_heads))
        self.v_proj = nn.Linear(d_model, num_kv_heads * (d_model // num_heads))
        self.o_proj = nn.Linear(d_model, d_model)

    @functools.cached_property
    def head_dim(self):
        return self.d_model // self.num_heads

    @functools.cached_property
    def n_rep(self):
        return self.num_heads // self.num_kv_heads

    @functools.cached_property
    def softmax_scale(self):
        return 1.0 / self.head_dim

    def forward(self, x, cache=None):
        D, rep, scale = self.head_dim, self.n_rep, self.softmax_scale
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.num_heads, D).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.num_kv_heads, D).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.num_kv_heads, D).transpose(1, 2)
        if cache is not None:
            k = torch.cat((cache[0], k), dim=2)
            v = torch.cat((cache[1], v), dim=2)
        S = k.shape[2]
        scores = torch.matmul(q, k.repeat_interleave(rep, dim=1).transpose(2, 3)) * scale
        causal = torch.ones(T, S, dtype=torch.bool, device=x.device).tril(S - T)
        scores = scores.masked_fill(~causal, float("-inf"))
        out = torch.matmul(scores.softmax(dim=-1), v.repeat_interleave(rep, dim=1))
        return self.o_proj(out.transpose(1, 2).reshape(B, T, C)), (k, v)
# bug-line: 31
