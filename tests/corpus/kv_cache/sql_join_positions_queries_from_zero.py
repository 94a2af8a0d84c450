# attnprep: kv_cache
# expect: wrong_output
# diagnosis: cache_mask_not_offset
"""Relational (SQL) thinking: the allowed (query, key) pairs are a join of a table of query
positions with a table of key positions ON k.pos <= q.pos, written as a broadcast comparison; the
query table was numbered from 0 in every call instead of from the cached length."""
import math

import torch
import torch.nn as nn


def join_on_le(q_pos, k_pos):
    # SELECT q.pos, k.pos FROM queries q JOIN keys k ON k.pos <= q.pos  -> a (Tq, Tk) bool relation
    return k_pos[None, :] <= q_pos[:, None]


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.num_heads, self.num_kv_heads = num_heads, num_kv_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, cache=None):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        k_new = self.k_proj(x).view(B, T, self.num_kv_heads, self.head_dim).transpose(1, 2)
        v_new = self.v_proj(x).view(B, T, self.num_kv_heads, self.head_dim).transpose(1, 2)
        if cache is None:
            past_len, k_all, v_all = 0, k_new, v_new
        else:
            past_k, past_v = cache
            past_len = past_k.shape[2]
            k_all = torch.cat([past_k, k_new], dim=2)
            v_all = torch.cat([past_v, v_new], dim=2)
        total = k_all.shape[2]
        queries = torch.arange(T, device=x.device)
        keys = torch.arange(total, device=x.device)
        allowed = join_on_le(queries, keys)  # (T, total)
        rep = self.num_heads // self.num_kv_heads
        k_rep = k_all.repeat_interleave(rep, dim=1)
        v_rep = v_all.repeat_interleave(rep, dim=1)
        scores = q @ k_rep.transpose(-1, -2) / math.sqrt(self.head_dim)
        scores = scores.masked_fill(~allowed, float("-inf"))
        out = (scores.softmax(-1) @ v_rep).transpose(1, 2).reshape(B, T, C)
        return self.o_proj(out), (k_all, v_all)
# bug-line: 41
