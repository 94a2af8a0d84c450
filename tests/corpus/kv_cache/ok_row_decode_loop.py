# attnprep: kv_cache
# expect: passed
"""Chunked over query rows (how a decode loop thinks): each new token attends k[..., :past + t + 1]
with no mask at all; GQA by viewing the query heads as (G, rep) groups; output rows concatenated."""
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
        G, D = self.num_kv_heads, self.head_dim
        R = self.num_heads // G
        q = self.q_proj(x).view(B, T, G, R, D).permute(0, 2, 3, 1, 4)  # (B, G, R, T, D)
        k = self.k_proj(x).view(B, T, G, D).transpose(1, 2)            # (B, G, T, D)
        v = self.v_proj(x).view(B, T, G, D).transpose(1, 2)
        if cache is not None:
            k = torch.cat((cache[0], k), 2)
            v = torch.cat((cache[1], v), 2)
        past = k.shape[2] - T
        rows = []
        for t in range(T):
            kt = k[:, :, None, : past + t + 1]                          # (B, G, 1, s, D)
            vt = v[:, :, None, : past + t + 1]
            s = (q[:, :, :, t:t + 1] @ kt.transpose(-1, -2)) / math.sqrt(D)  # (B, G, R, 1, s)
            rows.append(torch.softmax(s, dim=-1) @ vt)                  # (B, G, R, 1, D)
        o = torch.cat(rows, dim=3)                                      # (B, G, R, T, D)
        o = o.permute(0, 3, 1, 2, 4).reshape(B, T, C)
        return self.o_proj(o), (k, v)
