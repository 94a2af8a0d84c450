# attnprep: kv_cache
# expect: passed
"""Correct: gpt-fast's KVCache as a helper object made fresh on every call (no state kept between
calls): k_cache / v_cache preallocated to T_past + T_new with new_zeros, the old cache and the new
tokens written with index_copy_ at input_pos, update() returning the full caches; the mask from
input_pos compared with arange."""

import math

import torch
import torch.nn as nn


class KVCache:
    def __init__(self, like, batch, heads, max_len, head_dim):
        self.k_cache = like.new_zeros(batch, heads, max_len, head_dim)
        self.v_cache = like.new_zeros(batch, heads, max_len, head_dim)

    def update(self, input_pos, k_val, v_val):
        self.k_cache = self.k_cache.index_copy(2, input_pos, k_val)
        self.v_cache = self.v_cache.index_copy(2, input_pos, v_val)
        return self.k_cache, self.v_cache


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.n_head, self.n_local_heads = num_heads, num_kv_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, cache=None):
        bsz, seqlen, _ = x.shape
        past = 0 if cache is None else cache[0].shape[2]
        q = self.q_proj(x).view(bsz, seqlen, self.n_head, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(bsz, seqlen, self.n_local_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(bsz, seqlen, self.n_local_heads, self.head_dim).transpose(1, 2)
        kv = KVCache(k, bsz, self.n_local_heads, past + seqlen, self.head_dim)
        if cache is not None:
            kv.update(torch.arange(past, device=x.device), cache[0], cache[1])
        input_pos = torch.arange(past, past + seqlen, device=x.device)
        k, v = kv.update(input_pos, k, v)
        new_cache = (k, v)
        k = k.repeat_interleave(self.n_head // self.n_local_heads, dim=1)
        v = v.repeat_interleave(self.n_head // self.n_local_heads, dim=1)
        mask = torch.arange(past + seqlen, device=x.device)[None, :] <= input_pos[:, None]
        s = q @ k.transpose(2, 3) / math.sqrt(self.head_dim)
        s = s.masked_fill(~mask, float("-inf"))
        y = (s.softmax(-1) @ v).transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return self.o_proj(y), new_cache
