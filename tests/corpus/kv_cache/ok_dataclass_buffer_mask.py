# attnprep: kv_cache
# expect: passed
"""Dataclass config, a tril mask registered as a non-persistent buffer for a max length and sliced
at the cache offset, torch.where with finfo.min, cache kept as (B, T, G, D) inside and transposed on return."""
import math
from dataclasses import dataclass

import torch
import torch.nn as nn


@dataclass
class AttnConfig:
    d_model: int
    n_head: int
    n_kv_head: int
    max_len: int = 256

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_head


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.cfg = cfg = AttnConfig(d_model, num_heads, num_kv_heads)
        self.q_proj = nn.Linear(cfg.d_model, cfg.n_head * cfg.head_dim)
        self.k_proj = nn.Linear(cfg.d_model, cfg.n_kv_head * cfg.head_dim)
        self.v_proj = nn.Linear(cfg.d_model, cfg.n_kv_head * cfg.head_dim)
        self.o_proj = nn.Linear(cfg.n_head * cfg.head_dim, cfg.d_model)
        self.register_buffer(
            "causal", torch.tril(torch.ones(cfg.max_len, cfg.max_len, dtype=torch.bool)), persistent=False
        )

    def forward(self, x, cache=None):
        c = self.cfg
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, c.n_head, c.head_dim)
        k = self.k_proj(x).view(B, T, c.n_kv_head, c.head_dim)
        v = self.v_proj(x).view(B, T, c.n_kv_head, c.head_dim)
        past = 0
        if cache is not None:
            pk, pv = cache
            past = pk.size(2)
            k = torch.cat((pk.permute(0, 2, 1, 3), k), dim=1)
            v = torch.cat((pv.permute(0, 2, 1, 3), v), dim=1)
        S = past + T
        rep = c.n_head // c.n_kv_head
        kr = k.repeat_interleave(rep, dim=2)
        vr = v.repeat_interleave(rep, dim=2)
        att = torch.einsum("bqhd,bkhd->bhqk", q, kr) / math.sqrt(c.head_dim)
        allowed = self.causal[past:S, :S]
        att = torch.where(allowed, att, torch.finfo(att.dtype).min)
        att = att.softmax(dim=-1)
        y = torch.einsum("bhqk,bkhd->bqhd", att, vr).reshape(B, T, c.d_model)
        return self.o_proj(y), (k.permute(0, 2, 1, 3), v.permute(0, 2, 1, 3))
