# attnprep: kv_cache
# expect: passed
"""GPT-J's layer_past naming, the query heads folded into the batch and torch.bmm for both products,
the causal mask as a (T_new, S) bool offset by the past length: correct."""

import math

import torch
from torch import nn


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.n_head, self.n_kv = num_heads, num_kv_heads
        self.d = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.d)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.d)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, cache=None):
        layer_past = cache
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.n_head, self.d).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.n_kv, self.d).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.n_kv, self.d).transpose(1, 2)
        if layer_past is not None:
            past_key, past_value = layer_past
            k = torch.cat((past_key, k), dim=-2)
            v = torch.cat((past_value, v), dim=-2)
        present = (k, v)
        S = k.size(-2)
        rep = self.n_head // self.n_kv
        k = k[:, :, None].expand(B, self.n_kv, rep, S, self.d).reshape(B * self.n_head, S, self.d)
        v = v[:, :, None].expand(B, self.n_kv, rep, S, self.d).reshape(B * self.n_head, S, self.d)
        w = torch.bmm(q.reshape(B * self.n_head, T, self.d), k.transpose(1, 2)) / math.sqrt(self.d)
        i = torch.arange(T, device=x.device)[:, None] + (S - T)
        j = torch.arange(S, device=x.device)[None, :]
        w = w.masked_fill(j > i, float("-inf"))
        a = torch.bmm(w.softmax(-1), v).view(B, self.n_head, T, self.d)
        return self.o_proj(a.transpose(1, 2).reshape(B, T, C)), present
