# attnprep: kv_cache
# expect: passed
"""LMDeploy's naming for a paged-attention reference: history_lengths (the cached tokens), q_seqlens
(the new ones), kv_seqlens (their sum), q_start_loc; the cache passed in and out as (k, v) of the
KV heads, the mask from the query and key positions compared."""
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
        bsz, q_seqlens, _ = x.shape
        history_lengths = 0 if cache is None else cache[0].shape[2]
        kv_seqlens = history_lengths + q_seqlens
        q_start_loc = history_lengths  # position of the first new token
        query_states = self.q_proj(x).view(bsz, q_seqlens, self.num_heads, self.head_dim).transpose(1, 2)
        key_states = self.k_proj(x).view(bsz, q_seqlens, self.num_kv_heads, self.head_dim).transpose(1, 2)
        value_states = self.v_proj(x).view(bsz, q_seqlens, self.num_kv_heads, self.head_dim).transpose(1, 2)
        if cache is not None:
            key_states = torch.cat([cache[0], key_states], dim=2)
            value_states = torch.cat([cache[1], value_states], dim=2)
        past_key_value = (key_states, value_states)
        group = self.num_heads // self.num_kv_heads
        key_states = key_states.repeat_interleave(group, dim=1)
        value_states = value_states.repeat_interleave(group, dim=1)
        q_pos = torch.arange(q_start_loc, kv_seqlens, device=x.device)[:, None]  # (q_seqlens, 1)
        k_pos = torch.arange(kv_seqlens, device=x.device)[None, :]  # (1, kv_seqlens)
        attn = query_states @ key_states.transpose(-1, -2) / math.sqrt(self.head_dim)
        attn = attn.masked_fill(k_pos > q_pos, float("-inf")).softmax(dim=-1)
        out = (attn @ value_states).transpose(1, 2).reshape(bsz, q_seqlens, -1)
        return self.o_proj(out), past_key_value
