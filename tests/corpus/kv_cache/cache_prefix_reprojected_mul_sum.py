# attnprep: kv_cache
# expect: structure
# diagnosis: cache_prefix_reprojected
# Right numbers, no saving: the hidden states ride along in the cache and every step projects the prefix again, written as a broadcast
# multiply-and-sum with the weight rows.
import math

import torch
import torch.nn as nn


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.h, self.g, self.d = num_heads, num_kv_heads, d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.d)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.d)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, cache=None):
        B, T, C = x.shape
        seen = x if cache is None else torch.cat([cache[2], x], dim=1)  # every token so far
        S = seen.shape[1]
        q = self.q_proj(x).view(B, T, self.h, self.d).transpose(1, 2)
        k = ((seen[:, :, None, :] * self.k_proj.weight).sum(-1) + self.k_proj.bias).view(B, S, self.g, self.d).transpose(1, 2)
        v = ((seen[:, :, None, :] * self.v_proj.weight).sum(-1) + self.v_proj.bias).view(B, S, self.g, self.d).transpose(1, 2)
        kr = k.repeat_interleave(self.h // self.g, dim=1)
        vr = v.repeat_interleave(self.h // self.g, dim=1)
        scores = q @ kr.transpose(-2, -1) / math.sqrt(self.d)
        mask = torch.tril(torch.ones(T, S, dtype=torch.bool, device=x.device), diagonal=S - T)
        attn = scores.masked_fill(~mask, float("-inf")).softmax(-1)
        out = (attn @ vr).transpose(1, 2).reshape(B, T, C)
        return self.o_proj(out), (k, v, seen)
# bug-line: 23, 26
