# attnprep: kv_cache
# expect: structure
# diagnosis: cache_after_repeat_kv
"""Heads-first with the groups widened by expand + flatten and made contiguous, then the decode
concatenation; `present` is taken from the widened keys and values: num_heads heads cached instead
of num_kv_heads."""
import math

import torch
from torch import nn


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.nh, self.nkv = num_heads, num_kv_heads
        self.hd = d_model // num_heads
        self.q_proj = nn.Linear(d_model, num_heads * self.hd)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.hd)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.hd)
        self.o_proj = nn.Linear(num_heads * self.hd, d_model)

    def forward(self, x, cache=None):
        bsz, new, _ = x.shape
        group = self.nh // self.nkv
        q = self.q_proj(x).unflatten(-1, (self.nh, self.hd)).permute(0, 2, 1, 3)
        k = self.k_proj(x).unflatten(-1, (self.nkv, self.hd)).permute(0, 2, 1, 3)
        v = self.v_proj(x).unflatten(-1, (self.nkv, self.hd)).permute(0, 2, 1, 3)
        k = k[:, :, None].expand(-1, -1, group, -1, -1).flatten(1, 2).contiguous()
        v = v[:, :, None].expand(-1, -1, group, -1, -1).flatten(1, 2).contiguous()
        if cache is not None:
            k = torch.cat((cache[0], k), dim=-2)
            v = torch.cat((cache[1], v), dim=-2)
        present = (k, v)
        total = k.shape[-2]
        att = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(self.hd)
        qi = torch.arange(total - new, total, device=x.device)[:, None]
        ki = torch.arange(total, device=x.device)[None, :]
        att = att.masked_fill(ki > qi, float("-inf"))
        y = torch.einsum("bhqk,bhkd->bhqd", att.softmax(-1), v)
        return self.o_proj(y.permute(0, 2, 1, 3).flatten(2)), present
# bug-line: 29, 34
