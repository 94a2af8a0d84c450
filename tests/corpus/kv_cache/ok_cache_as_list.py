# attnprep: kv_cache
# expect: passed
"""Correct: the cache returned as a list [k, v] (as many people write it), unpacked with `past_k, past_v = cache if cache is not None else (None, None)`,
torch.cat on the time axis, the chunk's mask made as x.new_ones(T_new, T_total, dtype=bool)
.tril(diagonal=T_past), repeat_kv by expand + reshape, F.softmax(dtype=float32).to(dtype)."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.h, self.kv = num_heads, num_kv_heads
        self.hd = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.hd)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.hd)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, cache=None):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.h, self.hd).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.kv, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.kv, self.hd).transpose(1, 2)
        past_k, past_v = cache if cache is not None else (None, None)
        if past_k is not None:
            k = torch.cat((past_k, k), dim=-2)
            v = torch.cat((past_v, v), dim=-2)
        new_cache = [k, v]
        T_total = k.shape[-2]
        n_rep = self.h // self.kv
        k = k[:, :, None].expand(B, self.kv, n_rep, T_total, self.hd).reshape(B, self.h, T_total, self.hd)
        v = v[:, :, None].expand(B, self.kv, n_rep, T_total, self.hd).reshape(B, self.h, T_total, self.hd)
        allowed = x.new_ones(T, T_total, dtype=torch.bool).tril(diagonal=T_total - T)
        s = (q @ k.transpose(-1, -2)) / math.sqrt(self.hd)
        s = s.masked_fill(~allowed, float("-inf"))
        p = F.softmax(s, dim=-1, dtype=torch.float32).to(q.dtype)
        return self.o_proj((p @ v).transpose(1, 2).reshape(B, T, C)), new_cache
