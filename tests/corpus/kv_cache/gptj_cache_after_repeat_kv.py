# attnprep: kv_cache
# expect: structure
# diagnosis: cache_after_repeat_kv
"""HF Llama's repeat_kv helper, but called before the cache update: the cache is kept with the repeated
num_heads heads (outputs right, the cache num_heads / num_kv_heads times too big)."""

import math

import torch
import torch.nn as nn


def repeat_kv(hidden_states, n_rep):
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.num_heads, self.num_kv_heads = num_heads, num_kv_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        n_rep = self.num_heads // self.num_kv_heads
        q = self.q_proj(x).view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        k = repeat_kv(self.k_proj(x).view(B, T, self.num_kv_heads, self.head_dim).transpose(1, 2), n_rep)
        v = repeat_kv(self.v_proj(x).view(B, T, self.num_kv_heads, self.head_dim).transpose(1, 2), n_rep)
        if cache is not None:
            k = torch.cat([cache[0], k], dim=2)
            v = torch.cat([cache[1], v], dim=2)
        S = k.shape[2]
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
        keep = torch.ones(T, S, dtype=torch.bool, device=x.device).tril(S - T)
        scores = scores.masked_fill(~keep, float("-inf"))
        out = (scores.softmax(-1) @ v).transpose(1, 2).reshape(B, T, -1)
        return self.o_proj(out), (k, v)
# bug-line: 35
