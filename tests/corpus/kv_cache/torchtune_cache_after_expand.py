# attnprep: kv_cache
# expect: structure
# diagnosis: cache_after_repeat_kv
"""torchtune-style (q, k, v as (B, T, H, D), expand to the query heads before the SDPA-like core); the
cache is taken after the expand: num_heads heads instead of num_kv_heads."""

import math

import torch
from torch import nn


class KVCacheAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, num_heads * self.head_dim)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.o_proj = nn.Linear(num_heads * self.head_dim, d_model)

    def forward(self, x: torch.Tensor, cache: tuple[torch.Tensor, torch.Tensor] | None = None):
        b, s_x, _ = x.shape
        q_per_kv = self.num_heads // self.num_kv_heads
        q = self.q_proj(x).view(b, s_x, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, s_x, self.num_kv_heads, 1, self.head_dim)
        v = self.v_proj(x).view(b, s_x, self.num_kv_heads, 1, self.head_dim)
        k = k.expand(b, s_x, self.num_kv_heads, q_per_kv, self.head_dim).reshape(b, s_x, -1, self.head_dim)
        v = v.expand(b, s_x, self.num_kv_heads, q_per_kv, self.head_dim).reshape(b, s_x, -1, self.head_dim)
        k, v = k.transpose(1, 2), v.transpose(1, 2)  # (b, n_h, s_x, h_d)
        if cache is not None:
            k = torch.cat([cache[0], k], dim=2)
            v = torch.cat([cache[1], v], dim=2)
        new_cache = (k, v)
        s_kv = k.size(2)
        offset = s_kv - s_x
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
        mask = torch.ones(s_x, s_kv, dtype=torch.bool, device=x.device).tril(diagonal=offset)
        scores = scores.masked_fill(~mask, float("-inf"))
        out = scores.softmax(dim=-1) @ v
        out = out.transpose(1, 2).reshape(b, s_x, -1)
        return self.o_proj(out), new_cache
# bug-line: 30, 36
