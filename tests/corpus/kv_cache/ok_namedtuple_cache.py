# attnprep: kv_cache
# expect: passed
"""Correct: the cache returned as a typing.NamedTuple KVCache(k, v) and read back by unpacking; grouped 5-D einsum; positions as aranges."""
from typing import NamedTuple, Optional

import torch
import torch.nn as nn


class KVCache(NamedTuple):
    k: torch.Tensor  # (B, Hkv, T, D)
    v: torch.Tensor


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.h, self.g = num_heads, num_heads // num_kv_heads
        self.hkv, self.d = num_kv_heads, d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.d)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.d)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x: torch.Tensor, cache: Optional[KVCache] = None):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.hkv, self.g, self.d).permute(0, 2, 3, 1, 4)   # (B, Hkv, G, T, D)
        k = self.k_proj(x).view(B, T, self.hkv, self.d).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.hkv, self.d).transpose(1, 2)
        if cache is not None:
            past_k, past_v = cache
            k = torch.cat((past_k, k), dim=-2)
            v = torch.cat((past_v, v), dim=-2)
        S = k.shape[-2]
        past = S - T
        s = torch.einsum("bngtd,bnsd->bngts", q, k) / self.d ** 0.5
        pos_q = torch.arange(past, S, device=x.device)
        pos_k = torch.arange(S, device=x.device)
        s = s.masked_fill(pos_k[None, :] > pos_q[:, None], float("-inf"))
        o = torch.einsum("bngts,bnsd->btngd", s.softmax(-1), v).reshape(B, T, C)
        return self.o_proj(o), KVCache(k, v)
