# attnprep: kv_cache
# expect: mask_leak
# diagnosis: cache_chunk_unmasked
"""mamba_ssm / Jamba generation habits: an InferenceParams-like object (seqlen_offset, key_value_memory)
rebuilt from the tuple, `if params.seqlen_offset == 0: prefill else: step` branches."""
from dataclasses import dataclass

import torch
import torch.nn as nn


@dataclass
class InferenceParams:
    seqlen_offset: int
    key_value_memory: tuple | None

    @classmethod
    def from_cache(cls, cache):
        return cls(0, None) if cache is None else cls(cache[0].shape[2], cache)


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.num_heads, self.num_kv_heads = num_heads, num_kv_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.o_proj = nn.Linear(d_model, d_model)

    def _heads(self, t, n):
        B, T, _ = t.shape
        return t.view(B, T, n, self.head_dim).transpose(1, 2)

    def forward(self, x, cache=None):
        params = InferenceParams.from_cache(cache)
        B, T, C = x.shape
        q = self._heads(self.q_proj(x), self.num_heads)
        k = self._heads(self.k_proj(x), self.num_kv_heads)
        v = self._heads(self.v_proj(x), self.num_kv_heads)
        if params.seqlen_offset > 0:
            k = torch.cat([params.key_value_memory[0], k], dim=2)
            v = torch.cat([params.key_value_memory[1], v], dim=2)
        g = self.num_heads // self.num_kv_heads
        kr, vr = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)
        scores = q @ kr.transpose(-2, -1) * self.head_dim ** -0.5
        if params.seqlen_offset == 0:
            # prefill: causal
            mask = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
            scores = scores.masked_fill(mask, float("-inf"))
        # step: the new token sees the whole cache
        out = scores.softmax(-1) @ vr
        return self.o_proj(out.transpose(1, 2).reshape(B, T, C)), (k, v)
# bug-line: 48
