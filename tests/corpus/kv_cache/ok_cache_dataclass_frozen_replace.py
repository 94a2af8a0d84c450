# attnprep: kv_cache
# expect: passed
"""Correct: a cache handled through a small frozen dataclass internally (converted back to a tuple), torch.where
causal offset with arange grids, expand+reshape for the groups."""
import math
from dataclasses import dataclass, replace
from typing import Optional, Tuple

import torch
import torch.nn as nn


@dataclass(frozen=True)
class KV:
    k: torch.Tensor
    v: torch.Tensor

    @property
    def length(self) -> int:
        return self.k.shape[2]

    def append(self, k, v) -> "KV":
        return replace(self, k=torch.cat([self.k, k], 2), v=torch.cat([self.v, v], 2))


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.H, self.G = num_heads, num_kv_heads
        self.D = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.D)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.D)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, cache: Optional[Tuple[torch.Tensor, torch.Tensor]] = None):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.H, self.D).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.G, self.D).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.G, self.D).transpose(1, 2)
        kv = KV(k, v) if cache is None else KV(*cache).append(k, v)
        S = kv.length
        rep = self.H // self.G
        K = kv.k[:, :, None].expand(B, self.G, rep, S, self.D).reshape(B, self.H, S, self.D)
        V = kv.v[:, :, None].expand(B, self.G, rep, S, self.D).reshape(B, self.H, S, self.D)
        s = q @ K.transpose(-1, -2) / math.sqrt(self.D)
        qpos = torch.arange(S - T, S, device=x.device)[:, None]
        kpos = torch.arange(S, device=x.device)[None, :]
        s = torch.where(kpos <= qpos, s, torch.full_like(s, float("-inf")))
        y = (s.softmax(-1) @ V).transpose(1, 2).reshape(B, T, C)
        return self.o_proj(y), (kv.k, kv.v)
