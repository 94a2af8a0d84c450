# attnprep: kv_cache
# expect: wrong_output
# diagnosis: scale_d_model
"""A cached GQA that loops over query heads, reading KV head h // group; the scale is over d_model."""

import math

import torch
import torch.nn as nn


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

    def forward(self, x, cache=None):
        B, T, C = x.shape
        H, KV, D = self.num_heads, self.num_kv_heads, self.head_dim
        q = self.q_proj(x).view(B, T, H, D).transpose(1, 2)
        k = self.k_proj(x).view(B, T, KV, D).transpose(1, 2)
        v = self.v_proj(x).view(B, T, KV, D).transpose(1, 2)
        if cache is not None:
            k = torch.cat([cache[0], k], dim=2)
            v = torch.cat([cache[1], v], dim=2)
        S = k.shape[2]
        allowed = torch.ones(T, S, dtype=torch.bool, device=x.device).tril(S - T)
        group = H // KV
        outs = []
        for h in range(H):
            qh = q[:, h]
            kh = k[:, h // group]
            vh = v[:, h // group]
            scores = (qh @ kh.transpose(-2, -1)) / math.sqrt(C)
            scores = scores.masked_fill(~allowed, float("-inf"))
            probs = torch.softmax(scores, dim=-1)
            outs.append(probs @ vh)
        out = torch.stack(outs, dim=2).reshape(B, T, C)
        return self.o_proj(out), (k, v)
