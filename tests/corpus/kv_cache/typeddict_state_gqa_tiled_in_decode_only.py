# attnprep: kv_cache
# expect: wrong_output
# diagnosis: gqa_heads_tiled
"""typing.TypedDict for the step state (`StepState(q, k, v, past)`), a `_widen()` helper for the KV
heads. The prefill path widens with repeat_interleave (grouped); the decode path was written later
with `expand(...).reshape` over a new axis placed before the KV-head axis, which tiles the heads:
wrong for every call that has a cache, and only when there are several KV heads and several
query heads per KV head."""

import math
from typing import Optional, TypedDict

import torch
import torch.nn as nn


class StepState(TypedDict):
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    past: Optional[int]


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.h, self.g, self.d = num_heads, num_kv_heads, d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.d)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.d)
        self.o_proj = nn.Linear(d_model, d_model)

    def _widen(self, t, decoding):
        r = self.h // self.g
        if not decoding:
            return t.repeat_interleave(r, dim=1)
        B, G, S, D = t.shape
        return t[:, None].expand(B, r, G, S, D).reshape(B, r * G, S, D)

    def forward(self, x, cache=None):
        B, T, C = x.shape
        st: StepState = {
            "q": self.q_proj(x).view(B, T, self.h, self.d).transpose(1, 2),
            "k": self.k_proj(x).view(B, T, self.g, self.d).transpose(1, 2),
            "v": self.v_proj(x).view(B, T, self.g, self.d).transpose(1, 2),
            "past": None if cache is None else cache[0].shape[2],
        }
        k, v = st["k"], st["v"]
        if cache is not None:
            k, v = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2)
        S = k.shape[2]
        decoding = st["past"] is not None
        s = st["q"] @ self._widen(k, decoding).transpose(-1, -2) / math.sqrt(self.d)
        s = s.masked_fill(torch.ones(T, S, dtype=torch.bool, device=x.device).triu(S - T + 1), float("-inf"))
        y = s.softmax(-1) @ self._widen(v, decoding)
        return self.o_proj(y.transpose(1, 2).reshape(B, T, C)), (k, v)
# bug-line: 38
