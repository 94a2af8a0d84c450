# attnprep: kv_cache
# expect: wrong_output
# diagnosis: cache_prepended + cache_after_repeat_kv
"""A context manager toggles the layer into a decoding mode for the length of one call (contextlib's
@contextmanager on the module, restoring the previous mode on exit), and the cache update is written
as a small "append" function."""
import contextlib
import math

import torch
import torch.nn as nn


def expand_heads(t, num_heads):
    return t.repeat_interleave(num_heads // t.shape[1], dim=1)  # no-op once it has num_heads heads


def append(past, new):
    return torch.cat([new, past], dim=2)


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.o_proj = nn.Linear(d_model, d_model)
        self._past_len = None

    @contextlib.contextmanager
    def decoding(self, cache):
        previous = self._past_len
        self._past_len = 0 if cache is None else cache[0].shape[2]
        try:
            yield self._past_len
        finally:
            self._past_len = previous

    def forward(self, x, cache=None):
        B, T, C = x.shape
        with self.decoding(cache) as past_len:
            q = self.q_proj(x).view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
            k = self.k_proj(x).view(B, T, self.num_kv_heads, self.head_dim).transpose(1, 2)
            v = self.v_proj(x).view(B, T, self.num_kv_heads, self.head_dim).transpose(1, 2)
            k, v = expand_heads(k, self.num_heads), expand_heads(v, self.num_heads)
            if cache is not None:
                k = append(cache[0], k)
                v = append(cache[1], v)
            new_cache = (k, v)
            k, v = expand_heads(k, self.num_heads), expand_heads(v, self.num_heads)
            S = past_len + T
            scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
            allowed = torch.ones(T, S, dtype=torch.bool, device=x.device).tril(past_len)
            scores = scores.masked_fill(~allowed, float("-inf"))
            out = scores.softmax(dim=-1) @ v
        return self.o_proj(out.transpose(1, 2).reshape(B, T, C)), new_cache
# bug-line: 19, 49
