# attnprep: kv_cache
# expect: mask_leak
# diagnosis: cache_chunk_unmasked
"""An mlx-lm port: queries / keys / values, the cache kept as (B, n_kv_heads, L, head_dim), the
scores laid out (B, L, n_heads, S) by an einsum over the groups; the causal mask is made only when
there is no cache (mlx-lm's `mask = "causal" if cache is None`), so a chunk of several tokens after
a cache sees its own future."""

import torch
import torch.nn as nn


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.n_heads, self.n_kv_heads = num_heads, num_kv_heads
        self.head_dim = d_model // num_heads
        self.scale = self.head_dim ** -0.5
        self.q_proj = nn.Linear(d_model, num_heads * self.head_dim)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.o_proj = nn.Linear(num_heads * self.head_dim, d_model)

    def forward(self, x, cache=None):
        B, L, _ = x.shape
        rep = self.n_heads // self.n_kv_heads
        queries = self.q_proj(x).reshape(B, L, self.n_kv_heads, rep, self.head_dim)
        keys = self.k_proj(x).reshape(B, L, self.n_kv_heads, self.head_dim).transpose(1, 2)
        values = self.v_proj(x).reshape(B, L, self.n_kv_heads, self.head_dim).transpose(1, 2)
        if cache is not None:
            keys = torch.cat([cache[0], keys], dim=2)
            values = torch.cat([cache[1], values], dim=2)
        S = keys.shape[2]
        scores = torch.einsum("blgrd,bgsd->blgrs", queries, keys).reshape(B, L, self.n_heads, S) * self.scale
        # mlx-lm: mask = "causal" if cache is None else None
        if cache is None:
            causal = torch.ones(L, S, dtype=torch.bool, device=x.device).tril(S - L)
            scores = scores.masked_fill(~causal[None, :, None, :], float("-inf"))
        weights = torch.softmax(scores, dim=-1).reshape(B, L, self.n_kv_heads, rep, S)
        out = torch.einsum("blgrs,bgsd->blgrd", weights, values)
        return self.o_proj(out.reshape(B, L, -1)), (keys, values)
# bug-line: 36
