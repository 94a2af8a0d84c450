# attnprep: kv_cache
# expect: passed
"""Correct: the projections made in bfloat16 (gpt-fast builds its models so), each weight and bias cast
to the input's dtype at use; the cache concatenated on the time axis, the chunk's mask offset by the
cached length with tril(diagonal=T_past)."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.h, self.kv = num_heads, num_kv_heads
        self.hd = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model, dtype=torch.bfloat16)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.hd, dtype=torch.bfloat16)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.hd, dtype=torch.bfloat16)
        self.o_proj = nn.Linear(d_model, d_model, dtype=torch.bfloat16)

    @staticmethod
    def _lin(layer, x):
        return nn.functional.linear(x, layer.weight.to(x.dtype), layer.bias.to(x.dtype))

    def forward(self, x, cache=None):
        B, T, C = x.shape
        q = self._lin(self.q_proj, x).view(B, T, self.h, self.hd).transpose(1, 2)
        k = self._lin(self.k_proj, x).view(B, T, self.kv, self.hd).transpose(1, 2)
        v = self._lin(self.v_proj, x).view(B, T, self.kv, self.hd).transpose(1, 2)
        past_k, past_v = cache if cache is not None else (None, None)
        if past_k is not None:
            k = torch.cat((past_k, k), dim=-2)
            v = torch.cat((past_v, v), dim=-2)
        new_cache = (k, v)
        T_total = k.shape[-2]
        n_rep = self.h // self.kv
        k = k[:, :, None].expand(B, self.kv, n_rep, T_total, self.hd).reshape(B, self.h, T_total, self.hd)
        v = v[:, :, None].expand(B, self.kv, n_rep, T_total, self.hd).reshape(B, self.h, T_total, self.hd)
        allowed = x.new_ones(T, T_total, dtype=torch.bool).tril(diagonal=T_total - T)
        s = (q @ k.transpose(-1, -2)) / math.sqrt(self.hd)
        s = s.masked_fill(~allowed, float("-inf"))
        p = F.softmax(s, dim=-1, dtype=torch.float32).to(q.dtype)
        return self._lin(self.o_proj, (p @ v).transpose(1, 2).reshape(B, T, C)), new_cache
