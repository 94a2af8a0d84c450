# attnprep: kv_cache
# expect: passed
"""中文注释；用绝对位置构造因果掩码（torch.where 填 -inf），GQA 用 (B, G, n_rep, T, D) 分组视图，不复制 KV。"""

import math

import torch
import torch.nn as nn


class KVCacheAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int):
        super().__init__()
        self.h, self.g = num_heads, num_kv_heads
        self.d = d_model // num_heads
        self.q_proj = nn.Linear(d_model, num_heads * self.d)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.d)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.d)
        self.o_proj = nn.Linear(num_heads * self.d, d_model)

    def forward(self, x, cache=None):
        B, T, C = x.shape
        n_rep = self.h // self.g
        q = self.q_proj(x).view(B, T, self.g, n_rep, self.d).permute(0, 2, 3, 1, 4)  # (B, G, R, T, D)
        k = self.k_proj(x).view(B, T, self.g, self.d).transpose(1, 2)  # (B, G, T, D) 只算新 token
        v = self.v_proj(x).view(B, T, self.g, self.d).transpose(1, 2)
        if cache is not None:  # 旧的在前，新的在后
            k = torch.cat((cache[0], k), dim=2)
            v = torch.cat((cache[1], v), dim=2)
        S = k.shape[2]
        pos_q = torch.arange(S - T, S, device=x.device)  # 新 token 的绝对位置
        pos_k = torch.arange(S, device=x.device)
        scores = torch.einsum("bgrtd,bgsd->bgrts", q, k) / math.sqrt(self.d)
        scores = torch.where(pos_k[None, :] <= pos_q[:, None], scores, float("-inf"))
        w = scores.softmax(-1)
        out = torch.einsum("bgrts,bgsd->btgrd", w, v).reshape(B, T, C)
        return self.o_proj(out), (k, v)
