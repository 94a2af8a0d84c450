# attnprep: kv_cache
# expect: wrong_output
# diagnosis: cache_prepended + cache_after_repeat_kv
"""K and V stacked into one (2, B, heads, T, D) tensor per chunk, the chunks kept in a
collections.deque and concatenated; the repeat factor read off the stored heads."""
import math
from collections import deque

import torch
import torch.nn as nn


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.num_heads, self.num_kv_heads = num_heads, num_kv_heads
        self.n_rep = num_heads // num_kv_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.o_proj = nn.Linear(d_model, d_model)

    def _heads(self, t, n):
        B, T, _ = t.shape
        return t.view(B, T, n, self.head_dim).transpose(1, 2)

    def forward(self, x, cache=None):
        B, T, C = x.shape
        q = self._heads(self.q_proj(x), self.num_heads)
        kv_new = torch.stack([self._heads(self.k_proj(x), self.num_kv_heads), self._heads(self.v_proj(x), self.num_kv_heads)])
        kv_new = kv_new.repeat_interleave(self.n_rep, dim=2)
        chunks = deque()
        if cache is not None:
            chunks.append(torch.stack(cache))
        chunks.appendleft(kv_new)
        kv_all = torch.cat(tuple(chunks), dim=3)  # (2, B, heads, S, D)
        k_all, v_all = kv_all.unbind(0)
        S = k_all.shape[2]
        rep = self.num_heads // k_all.shape[1]
        k_rep, v_rep = k_all.repeat_interleave(rep, dim=1), v_all.repeat_interleave(rep, dim=1)
        scores = q @ k_rep.transpose(-2, -1) / math.sqrt(self.head_dim)
        visible = torch.ones(T, S, dtype=torch.bool, device=x.device).tril(S - T)
        scores = scores.masked_fill(~visible, float("-inf"))
        out = (scores.softmax(dim=-1) @ v_rep).transpose(1, 2).reshape(B, T, C)
        return self.o_proj(out), (k_all, v_all)
# bug-line: 32, 36
