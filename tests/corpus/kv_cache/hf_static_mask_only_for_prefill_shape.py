# attnprep: kv_cache
# expect: wrong_output
# diagnosis: cache_mask_not_offset
"""Hugging Face's newer cache_position habits: `cache_position = arange(past_seen_tokens,
past_seen_tokens + T)`, a `_update_causal_mask`-like helper, the decode step (one token) skipping the
mask as HF's fast path does. The helper builds the mask with torch.tril(ones(T, S)), top-left
aligned: right for the prefill and for a single decoded token, wrong for a chunk after a cache."""

import math

import torch
import torch.nn as nn


def update_causal_mask(query_len, key_len, device):
    if query_len == 1:
        return None  # one new token sees the whole cache
    return torch.tril(torch.ones(query_len, key_len, dtype=torch.bool, device=device))


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.num_heads, self.num_key_value_heads = num_heads, num_kv_heads
        self.num_key_value_groups = num_heads // num_kv_heads
        self.head_dim = d_model // num_heads
        self.scaling = self.head_dim ** -0.5
        self.q_proj = nn.Linear(d_model, num_heads * self.head_dim)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.o_proj = nn.Linear(num_heads * self.head_dim, d_model)

    def forward(self, x, cache=None):
        input_shape = x.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        past_seen_tokens = 0 if cache is None else cache[0].shape[-2]
        query_states = self.q_proj(x).view(hidden_shape).transpose(1, 2)
        key_states = self.k_proj(x).view(hidden_shape).transpose(1, 2)
        value_states = self.v_proj(x).view(hidden_shape).transpose(1, 2)
        if cache is not None:
            key_states = torch.cat([cache[0], key_states], dim=-2)
            value_states = torch.cat([cache[1], value_states], dim=-2)
        present = (key_states, value_states)
        key_states = key_states.repeat_interleave(self.num_key_value_groups, dim=1)
        value_states = value_states.repeat_interleave(self.num_key_value_groups, dim=1)
        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) * self.scaling
        causal_mask = update_causal_mask(input_shape[1], past_seen_tokens + input_shape[1], x.device)
        if causal_mask is not None:
            attn_weights = attn_weights.masked_fill(~causal_mask, torch.finfo(attn_weights.dtype).min)
        attn_weights = attn_weights.softmax(dim=-1)
        attn_output = torch.matmul(attn_weights, value_states).transpose(1, 2).reshape(*input_shape, -1)
        return self.o_proj(attn_output), present
# bug-line: 18
