# attnprep: kv_cache
# expect: passed
"""vLLM-flavoured: absolute positions of queries and keys compared with torch.where, queries grouped
per KV head (no repeat_kv), einsum, typed."""

from typing import Optional, Tuple

import torch
import torch.nn as nn

Cache = Tuple[torch.Tensor, torch.Tensor]


class KVCacheAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int) -> None:
        super().__init__()
        self.num_heads, self.num_kv_heads = num_heads, num_kv_heads
        self.head_size = d_model // num_heads
        self.scale = self.head_size ** -0.5
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_size)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_size)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x: torch.Tensor, cache: Optional[Cache] = None) -> Tuple[torch.Tensor, Cache]:
        B, T, C = x.shape
        KV, G, D = self.num_kv_heads, self.num_heads // self.num_kv_heads, self.head_size
        q = self.q_proj(x).view(B, T, KV, G, D)
        k = self.k_proj(x).view(B, T, KV, D).transpose(1, 2)
        v = self.v_proj(x).view(B, T, KV, D).transpose(1, 2)
        past = 0
        if cache is not None:
            past = cache[0].shape[2]
            k = torch.cat((cache[0], k), dim=2)
            v = torch.cat((cache[1], v), dim=2)
        S = past + T
        q_pos = torch.arange(past, S, device=x.device)
        k_pos = torch.arange(S, device=x.device)
        logits = torch.einsum("btkgd,bksd->bkgts", q, k) * self.scale
        logits = torch.where(k_pos[None, :] <= q_pos[:, None], logits, float("-inf"))
        out = torch.einsum("bkgts,bksd->btkgd", logits.softmax(-1), v).reshape(B, T, C)
        return self.o_proj(out), (k, v)
