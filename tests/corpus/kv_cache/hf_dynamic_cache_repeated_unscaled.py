# attnprep: kv_cache
# expect: wrong_output
# diagnosis: cache_after_repeat_kv + missing_scale
"""A tiny DynamicCache (update() concatenates and returns the full keys and values) fed with the keys
after repeat_kv, as in an eager path that repeats before caching; the scores are not scaled."""
import torch
import torch.nn as nn


class DynamicCache:
    def __init__(self, past=None):
        self.key_cache, self.value_cache = (None, None) if past is None else past

    def update(self, key_states, value_states):
        if self.key_cache is None:
            self.key_cache, self.value_cache = key_states, value_states
        else:
            self.key_cache = torch.cat([self.key_cache, key_states], dim=-2)
            self.value_cache = torch.cat([self.value_cache, value_states], dim=-2)
        return self.key_cache, self.value_cache


def repeat_kv(hidden_states, n_rep):
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.num_heads, self.num_key_value_heads = num_heads, num_kv_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, hidden_states, cache=None):
        bsz, q_len, _ = hidden_states.shape
        shape = (bsz, q_len, -1, self.head_dim)
        query_states = self.q_proj(hidden_states).view(shape).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(shape).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(shape).transpose(1, 2)
        n_rep = self.num_heads // self.num_key_value_heads
        key_states = repeat_kv(key_states, n_rep)
        value_states = repeat_kv(value_states, n_rep)
        past = DynamicCache(cache)
        key_states, value_states = past.update(key_states, value_states)
        kv_len = key_states.shape[-2]
        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3))
        causal = torch.ones(q_len, kv_len, dtype=torch.bool, device=hidden_states.device).tril(kv_len - q_len)
        attn_weights = attn_weights.masked_fill(~causal, torch.finfo(attn_weights.dtype).min)
        attn_weights = attn_weights.softmax(dim=-1)
        attn_output = torch.matmul(attn_weights, value_states).transpose(1, 2).reshape(bsz, q_len, -1)
        return self.o_proj(attn_output), (past.key_cache, past.value_cache)
# bug-line: 48, 53
