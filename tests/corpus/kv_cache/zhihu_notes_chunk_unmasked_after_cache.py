# attnprep: kv_cache
# expect: mask_leak
# diagnosis: cache_chunk_unmasked
"""知乎「KV Cache 手撕」笔记：prefill 时加因果掩码，decode 时「只有一个新 token，看得到全部历史，
所以不用掩码」。Correct for the prefill and for one-token steps; a chunk of several new tokens
after a cache is left without any mask (each new token sees the chunk's later tokens)."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.n_head, self.n_kv = num_heads, num_kv_heads
        self.hd = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.hd)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.hd)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, cache=None):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.n_head, self.hd).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.n_kv, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.n_kv, self.hd).transpose(1, 2)
        if cache is not None:
            # 拼接历史：老的在前，新的在后（时间维 dim=2）
            k = torch.cat([cache[0], k], dim=2)
            v = torch.cat([cache[1], v], dim=2)
        new_cache = (k, v)
        g = self.n_head // self.n_kv
        # GQA：每 g 个 query 头共享一个 kv 头
        k = k[:, :, None].expand(-1, -1, g, -1, -1).reshape(B, self.n_head, -1, self.hd)
        v = v[:, :, None].expand(-1, -1, g, -1, -1).reshape(B, self.n_head, -1, self.hd)
        att = q @ k.transpose(-2, -1) / math.sqrt(self.hd)
        if cache is None:
            # prefill：下三角掩码
            att = att.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        # decode：新 token 能看到所有历史，不需要掩码
        y = F.softmax(att, dim=-1) @ v
        return self.o_proj(y.transpose(1, 2).reshape(B, T, C)), new_cache
# bug-line: 40, 42
