# attnprep: gqa
# expect: wrong_output
# diagnosis: scale_by_dim
"""Scores kept with the queries before the heads, (B, T, H, S), as one einsum writes them
(`bqhd,bkhd->bqhk`), the KV heads grouped by expand + reshape; the softmax scale a property of a
small dataclass config."""
from dataclasses import dataclass

import torch
import torch.nn as nn


@dataclass
class AttnConfig:
    d_model: int
    n_heads: int
    n_kv_heads: int

    @property
    def head_dim(self):
        return self.d_model // self.n_heads

    @property
    def softmax_scale(self):
        return 1.0 / self.head_dim


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.cfg = AttnConfig(d_model, num_heads, num_kv_heads)
        D = self.cfg.head_dim
        self.q_proj = nn.Linear(d_model, num_heads * D)
        self.k_proj = nn.Linear(d_model, num_kv_heads * D)
        self.v_proj = nn.Linear(d_model, num_kv_heads * D)
        self.o_proj = nn.Linear(num_heads * D, d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        H, G, D = self.cfg.n_heads, self.cfg.n_kv_heads, self.cfg.head_dim
        q = self.q_proj(x).view(B, T, H, D)
        k = self.k_proj(x).view(B, T, G, 1, D).expand(B, T, G, H // G, D).reshape(B, T, H, D)
        v = self.v_proj(x).view(B, T, G, 1, D).expand(B, T, G, H // G, D).reshape(B, T, H, D)
        s = torch.einsum("bqhd,bkhd->bqhk", q, k) * self.cfg.softmax_scale
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)[:, None, :], float("-inf"))
        p = self.drop(s.softmax(dim=-1))
        return self.o_proj(torch.einsum("bqhk,bkhd->bqhd", p, v).reshape(B, T, C))
# bug-line: 25
