# attnprep: gqa
# expect: passed
"""vLLM-ish: a loop over the sequences of the batch, each attended on its own real tokens only (padding
removed by boolean indexing), queries grouped per KV head with a reshape; outputs at pads are zeros."""

import math

import torch
import torch.nn as nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, dropout: float = 0.0):
        super().__init__()
        self.num_heads, self.num_kv_heads = num_heads, num_kv_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        H, KV, D = self.num_heads, self.num_kv_heads, self.head_dim
        q_all, k_all, v_all = self.q_proj(x), self.k_proj(x), self.v_proj(x)
        out = x.new_zeros(B, T, C)
        for b in range(B):
            idx = torch.arange(T, device=x.device)
            if attention_mask is not None:
                idx = idx[attention_mask[b]]
            n = idx.numel()
            q = q_all[b, idx].view(n, KV, H // KV, D)  # query heads grouped under their KV head
            k = k_all[b, idx].view(n, KV, D)
            v = v_all[b, idx].view(n, KV, D)
            s = torch.einsum("ikgd,jkd->kgij", q, k) / math.sqrt(D)
            if is_causal:
                s = s.masked_fill(idx[None, :] > idx[:, None], float("-inf"))
            o = torch.einsum("kgij,jkd->ikgd", s.softmax(-1), v).reshape(n, C)
            out[b, idx] = o
        return self.o_proj(out)
