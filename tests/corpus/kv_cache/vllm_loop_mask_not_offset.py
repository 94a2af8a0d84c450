# attnprep: kv_cache
# expect: wrong_output
# diagnosis: cache_mask_not_offset
"""vLLM-style: the new tokens attend sequence by sequence in a loop; the causal mask is built as a
(T, S) tril without the offset of the cached tokens, so a decode step sees only key 0."""

import math

import torch
import torch.nn as nn


class KVCacheAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int):
        super().__init__()
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.head_size = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_size)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_size)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, cache=None):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.num_heads, self.head_size).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.num_kv_heads, self.head_size).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.num_kv_heads, self.head_size).transpose(1, 2)
        if cache is not None:
            k = torch.cat((cache[0], k), dim=2)
            v = torch.cat((cache[1], v), dim=2)
        new_cache = (k, v)
        S = k.shape[2]
        rep = self.num_heads // self.num_kv_heads
        mask = torch.ones(T, S, dtype=torch.bool, device=x.device).tril()
        outs = []
        for b in range(B):
            kb = k[b].repeat_interleave(rep, dim=0)
            vb = v[b].repeat_interleave(rep, dim=0)
            s = q[b] @ kb.transpose(-1, -2) / math.sqrt(self.head_size)
            s = s.masked_fill(~mask, float("-inf"))
            outs.append(torch.softmax(s, dim=-1) @ vb)
        out = torch.stack(outs).transpose(1, 2).reshape(B, T, C)
        return self.o_proj(out), new_cache
# bug-line: 35
