# attnprep: kv_cache
# expect: error
# diagnosis: cache_wrong_axis
"""Qwen(-1) QWenAttention habits: _split_heads / _merge_heads, layer_past concatenated with
torch.cat(dim=1) as Qwen keeps it, `present = (key, value)`, a causal_mask sliced from a square."""
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

    def _split_heads(self, tensor, num_heads, attn_head_size):
        new_shape = tensor.size()[:-1] + (num_heads, attn_head_size)
        return tensor.view(new_shape).transpose(1, 2)          # (B, heads, T, D)

    def _merge_heads(self, tensor, num_heads, attn_head_size):
        tensor = tensor.transpose(1, 2).contiguous()
        return tensor.view(tensor.size()[:-2] + (num_heads * attn_head_size,))

    def forward(self, x, cache=None):
        query = self._split_heads(self.q_proj(x), self.num_heads, self.head_dim)
        key = self._split_heads(self.k_proj(x), self.num_kv_heads, self.head_dim)
        value = self._split_heads(self.v_proj(x), self.num_kv_heads, self.head_dim)
        if cache is not None:
            past_key, past_value = cache
            key = torch.cat((past_key, key), dim=1)
            value = torch.cat((past_value, value), dim=1)
        present = (key, value)

        n_rep = self.num_heads // self.num_kv_heads
        key = key.repeat_interleave(n_rep, dim=1)
        value = value.repeat_interleave(n_rep, dim=1)

        query_length, key_length = query.size(-2), key.size(-2)
        attn_weights = torch.matmul(query, key.transpose(-1, -2)) / math.sqrt(self.head_dim)
        causal_mask = torch.tril(torch.ones((key_length, key_length), dtype=torch.bool, device=x.device))
        causal_mask = causal_mask[key_length - query_length: key_length, :key_length]
        attn_weights = attn_weights.masked_fill(~causal_mask, torch.finfo(attn_weights.dtype).min)
        attn_weights = attn_weights.softmax(dim=-1)
        attn_output = self._merge_heads(torch.matmul(attn_weights, value), self.num_heads, self.head_dim)
        return self.o_proj(attn_output), present
# bug-line: 37, 38
