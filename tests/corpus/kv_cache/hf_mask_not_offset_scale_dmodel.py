# attnprep: kv_cache
# expect: wrong_output
# diagnosis: cache_mask_not_offset + scale_d_model
"""Hugging Face style (past_key_value, repeat_kv by expand + reshape), two slips: the causal mask is
tril(ones(T, S)) from the top left, never shifted by the cached length, and the scores are divided by
sqrt(hidden_size)."""

import math

import torch
import torch.nn as nn


def repeat_kv(hidden_states: torch.Tensor, n_rep: int) -> torch.Tensor:
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


class KVCacheAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int):
        super().__init__()
        self.hidden_size = d_model
        self.num_heads = num_heads
        self.num_key_value_heads = num_kv_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, num_heads * self.head_dim)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.o_proj = nn.Linear(num_heads * self.head_dim, d_model)

    def forward(self, x, cache=None):
        bsz, q_len, _ = x.size()
        query_states = self.q_proj(x).view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        key_states = self.k_proj(x).view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        value_states = self.v_proj(x).view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        if cache is not None:
            key_states = torch.cat([cache[0], key_states], dim=2)
            value_states = torch.cat([cache[1], value_states], dim=2)
        past_key_value = (key_states, value_states)
        kv_len = key_states.shape[2]
        key_states = repeat_kv(key_states, self.num_heads // self.num_key_value_heads)
        value_states = repeat_kv(value_states, self.num_heads // self.num_key_value_heads)
        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) / math.sqrt(self.hidden_size)
        causal_mask = torch.tril(torch.ones(q_len, kv_len, dtype=torch.bool, device=x.device))
        attn_weights = attn_weights.masked_fill(~causal_mask, torch.finfo(attn_weights.dtype).min)
        attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_states.dtype)
        attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).contiguous().reshape(bsz, q_len, -1)
        return self.o_proj(attn_output), past_key_value
# bug-line: 46, 47
