# attnprep: gqa
# expect: passed
"""Correct: rotary-free GQA whose causal table is built once in __init__ as a plain attribute (not a
buffer), and moved the way Hugging Face's older caches were: `if self._tril.device != x.device:
self._tril = self._tril.to(x.device)`. On a GPU the first forward moves it."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model: int, n_heads: int, n_kv_heads: int, max_len: int = 64):
        super().__init__()
        self.h, self.g, self.d = n_heads, n_kv_heads, d_model // n_heads
        self.q_proj = nn.Linear(d_model, n_heads * self.d)
        self.k_proj = nn.Linear(d_model, n_kv_heads * self.d)
        self.v_proj = nn.Linear(d_model, n_kv_heads * self.d)
        self.o_proj = nn.Linear(n_heads * self.d, d_model)
        self._tril = torch.ones(max_len, max_len, dtype=torch.bool).tril()

    def forward(self, x, attention_mask=None, causal=False):
        B, T, _ = x.shape
        if self._tril.device != x.device:
            self._tril = self._tril.to(x.device)
        if self._tril.shape[0] < T:
            self._tril = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        q = self.q_proj(x).view(B, T, self.h, self.d).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.g, self.d).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.g, self.d).transpose(1, 2)
        k = k.repeat_interleave(self.h // self.g, dim=1)
        v = v.repeat_interleave(self.h // self.g, dim=1)
        s = q @ k.transpose(-2, -1) / math.sqrt(self.d)
        keep = torch.ones(T, T, dtype=torch.bool, device=x.device)
        if causal:
            keep = self._tril[:T, :T]
        keep = keep[None, None]
        if attention_mask is not None:
            keep = keep & attention_mask[:, None, None, :].bool()
        p = F.softmax(s.masked_fill(~keep, float("-inf")), dim=-1)
        return self.o_proj((p @ v).transpose(1, 2).reshape(B, T, self.h * self.d))
