# attnprep: kv_cache
# expect: wrong_output
# diagnosis: cache_prepended + scale_d_model
"""LitGPT's CausalSelfAttention habits: Config dataclass, n_query_groups, a KVCache object built per call."""
import math
from dataclasses import dataclass
from typing import Optional, Tuple

import torch
import torch.nn as nn


@dataclass
class Config:
    n_embd: int
    n_head: int
    n_query_groups: int

    @property
    def head_size(self) -> int:
        return self.n_embd // self.n_head


class KVCache:
    def __init__(self, k: Optional[torch.Tensor], v: Optional[torch.Tensor]):
        self.k, self.v = k, v

    def append(self, k: torch.Tensor, v: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        if self.k is not None:
            k = torch.cat((k, self.k), dim=2)
            v = torch.cat((v, self.v), dim=2)
        self.k, self.v = k, v
        return k, v


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.config = Config(d_model, num_heads, num_kv_heads)
        hs = self.config.head_size
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * hs)
        self.v_proj = nn.Linear(d_model, num_kv_heads * hs)
        self.o_proj = nn.Linear(d_model, d_model)

    def scaled_dot_product_attention(self, q, k, v, mask):
        scale = 1.0 / math.sqrt(self.config.n_embd)
        scores = q @ k.mT * scale
        scores = torch.where(mask, scores, torch.full_like(scores, torch.finfo(scores.dtype).min))
        return torch.softmax(scores, dim=-1) @ v

    def forward(self, x, cache=None):
        B, T, C = x.size()
        cfg = self.config
        q = self.q_proj(x).view(B, T, cfg.n_head, cfg.head_size).transpose(1, 2)
        k = self.k_proj(x).view(B, T, cfg.n_query_groups, cfg.head_size).transpose(1, 2)
        v = self.v_proj(x).view(B, T, cfg.n_query_groups, cfg.head_size).transpose(1, 2)
        kv_cache = KVCache(*(cache if cache is not None else (None, None)))
        k, v = kv_cache.append(k, v)
        input_pos = torch.arange(k.size(2) - T, k.size(2), device=x.device)
        mask = input_pos[:, None] >= torch.arange(k.size(2), device=x.device)[None, :]
        q_per_kv = cfg.n_head // cfg.n_query_groups
        k_full = k.repeat_interleave(q_per_kv, dim=1)
        v_full = v.repeat_interleave(q_per_kv, dim=1)
        y = self.scaled_dot_product_attention(q, k_full, v_full, mask)
        y = y.transpose(1, 2).reshape(B, T, C)
        return self.o_proj(y), (kv_cache.k, kv_cache.v)
# bug-line: 30, 31, 47
