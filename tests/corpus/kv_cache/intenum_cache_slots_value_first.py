# attnprep: kv_cache
# expect: wrong_output
# diagnosis: cache_kv_swapped
"""The cache given back as a two-slot tuple filled by an IntEnum's slots (`slots[Slot.KEY] = k`) and
frozen into a tuple, read back by unpacking, GQA heads by expand + reshape, the offset causal mask by
arange."""
import math
from enum import IntEnum

import torch
import torch.nn as nn


class Slot(IntEnum):
    VALUE = 0
    KEY = 1


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.h, self.g, self.d = num_heads, num_kv_heads, d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.d)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.d)
        self.o_proj = nn.Linear(d_model, d_model)

    def _expand(self, t):
        b, g, s, d = t.shape
        return t[:, :, None].expand(b, g, self.h // g, s, d).reshape(b, self.h, s, d)

    def forward(self, x, cache=None):
        b, t, c = x.shape
        q = self.q_proj(x).view(b, t, self.h, self.d).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.g, self.d).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.g, self.d).transpose(1, 2)
        if cache is not None:
            past_k, past_v = cache
            k = torch.cat([past_k, k], dim=2)
            v = torch.cat([past_v, v], dim=2)
        slots = [None, None]
        slots[Slot.KEY], slots[Slot.VALUE] = k, v
        s = k.size(2)
        scores = q @ self._expand(k).transpose(-2, -1) / math.sqrt(self.d)
        rows = torch.arange(s - t, s, device=x.device)[:, None]
        cols = torch.arange(s, device=x.device)[None, :]
        scores = scores.masked_fill(cols > rows, float("-inf"))
        out = scores.softmax(dim=-1) @ self._expand(v)
        return self.o_proj(out.transpose(1, 2).reshape(b, t, c)), tuple(slots)
# bug-line: 15, 16
