# attnprep: kv_cache
# expect: passed
"""Correct, with one fused kv_proj = nn.Linear(d, 2 * kv_heads * head_dim) read with .chunk(2, -1):
the grader maps its rows to k_proj and v_proj."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.h = num_heads
        self.g = num_kv_heads
        self.d = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.kv_proj = nn.Linear(d_model, 2 * num_kv_heads * self.d)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, cache=None):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.h, self.d).transpose(1, 2)
        k, v = self.kv_proj(x).chunk(2, dim=-1)
        k = k.view(B, T, self.g, self.d).transpose(1, 2)
        v = v.view(B, T, self.g, self.d).transpose(1, 2)
        if cache is not None:
            k = torch.cat([cache[0], k], dim=2)
            v = torch.cat([cache[1], v], dim=2)
        new_cache = (k, v)
        S = k.shape[2]
        k = k.repeat_interleave(self.h // self.g, dim=1)
        v = v.repeat_interleave(self.h // self.g, dim=1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d)
        mask = torch.tril(torch.ones(T, S, dtype=torch.bool, device=x.device), diagonal=S - T)
        scores = scores.masked_fill(~mask, float("-inf"))
        attn = torch.softmax(scores, dim=-1)
        out = attn @ v
        out = out.transpose(1, 2).reshape(B, T, C)
        return self.o_proj(out), new_cache
