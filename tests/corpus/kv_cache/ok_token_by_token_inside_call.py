# attnprep: kv_cache
# expect: passed
"""Correct: even a multi-token call is run one token at a time through the same cached path (a decode loop
inside forward), outputs concatenated."""
import math
import torch
import torch.nn as nn


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.h, self.kvh = num_heads, num_kv_heads
        self.hd = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.hd)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.hd)
        self.o_proj = nn.Linear(d_model, d_model)

    def _step(self, xt, k_all, v_all):
        B = xt.shape[0]
        q = self.q_proj(xt).view(B, self.h, 1, self.hd)
        K = k_all.repeat_interleave(self.h // self.kvh, dim=1)
        V = v_all.repeat_interleave(self.h // self.kvh, dim=1)
        p = torch.softmax(q @ K.transpose(-1, -2) / math.sqrt(self.hd), dim=-1)   # every cached key is visible
        return self.o_proj((p @ V).reshape(B, -1))

    def forward(self, x, cache=None):
        B, T, C = x.shape
        k_new = self.k_proj(x).view(B, T, self.kvh, self.hd).transpose(1, 2)
        v_new = self.v_proj(x).view(B, T, self.kvh, self.hd).transpose(1, 2)
        k_all = k_new if cache is None else torch.cat([cache[0], k_new], 2)
        v_all = v_new if cache is None else torch.cat([cache[1], v_new], 2)
        past = k_all.shape[2] - T
        outs = [self._step(x[:, t], k_all[:, :, :past + t + 1], v_all[:, :, :past + t + 1]) for t in range(T)]
        return torch.stack(outs, 1), (k_all, v_all)
