# attnprep: kv_cache
# expect: structure
# diagnosis: cache_after_repeat_kv
"""Jamba's hybrid naming: the attention is one "mixer" among Mamba mixers (layer_type,
attn_layer_period kept as config), JambaAttention-like repeat_kv and past_key_value; the cache
stored after the KV heads were repeated."""
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
    layer_type = "attention"  # the other layers of a Jamba block are "mamba"
    attn_layer_period = 8
    attn_layer_offset = 4

    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.num_heads = num_heads
        self.num_key_value_heads = num_kv_heads
        self.num_key_value_groups = num_heads // num_kv_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, num_heads * self.head_dim)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.o_proj = nn.Linear(num_heads * self.head_dim, d_model)

    def forward(self, x, cache=None):
        bsz, q_len, _ = x.shape
        query_states = self.q_proj(x).view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        key_states = self.k_proj(x).view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        value_states = self.v_proj(x).view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        key_states = repeat_kv(key_states, self.num_key_value_groups)
        value_states = repeat_kv(value_states, self.num_key_value_groups)
        if cache is not None:
            past_key, past_value = cache
            key_states = torch.cat([past_key, key_states], dim=2)
            value_states = torch.cat([past_value, value_states], dim=2)
        past_key_value = (key_states, value_states)
        kv_len = key_states.shape[2]
        past_len = kv_len - q_len
        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) / math.sqrt(self.head_dim)
        causal = torch.ones(q_len, kv_len, dtype=torch.bool, device=x.device).tril(diagonal=past_len)
        attn_weights = attn_weights.masked_fill(~causal, float("-inf"))
        attn_weights = attn_weights.softmax(dim=-1)
        attn_output = torch.matmul(attn_weights, value_states).transpose(1, 2).reshape(bsz, q_len, -1)
        return self.o_proj(attn_output), past_key_value
# bug-line: 42, 43
