# attnprep: kv_cache
# expect: mask_leak
# diagnosis: cache_chunk_unmasked
"""GPT-2's split of the work: forward projects and caches (`past_key_value`, `use_cache` habits),
`_attn(query, key, value, attn_mask=None)` does the scores, the optional mask and the weighted sum,
and `_merge_heads` undoes the split. The causal mask is only built when there is no past, on the
belief that a cached call decodes one token; a chunk of several new tokens then sees its own future."""

import math

import torch
import torch.nn as nn


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.num_heads, self.num_kv_heads, self.head_dim = num_heads, num_kv_heads, d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.o_proj = nn.Linear(d_model, d_model)

    def _split_heads(self, t, n):
        return t.view(*t.shape[:-1], n, self.head_dim).permute(0, 2, 1, 3)  # (B, n, T, D)

    def _merge_heads(self, t):
        return t.permute(0, 2, 1, 3).flatten(2)  # (B, T, H * D)

    def _attn(self, query, key, value, attn_mask=None):
        rep = self.num_heads // self.num_kv_heads
        key, value = key.repeat_interleave(rep, dim=1), value.repeat_interleave(rep, dim=1)
        attn_weights = torch.matmul(query, key.transpose(-1, -2)) / math.sqrt(self.head_dim)
        if attn_mask is not None:
            attn_weights = attn_weights.masked_fill(~attn_mask, torch.finfo(attn_weights.dtype).min)
        return torch.matmul(attn_weights.softmax(dim=-1), value)

    def forward(self, x, cache=None):
        query = self._split_heads(self.q_proj(x), self.num_heads)
        key = self._split_heads(self.k_proj(x), self.num_kv_heads)
        value = self._split_heads(self.v_proj(x), self.num_kv_heads)
        past_key_value = cache
        if past_key_value is not None:
            key = torch.cat((past_key_value[0], key), dim=-2)
            value = torch.cat((past_key_value[1], value), dim=-2)
        present = (key, value)
        q_len, kv_len = query.shape[-2], key.shape[-2]
        attn_mask = None
        if past_key_value is None:
            attn_mask = torch.ones(q_len, kv_len, dtype=torch.bool, device=x.device).tril(kv_len - q_len)
        out = self._attn(query, key, value, attn_mask)
        return self.o_proj(self._merge_heads(out)), present
# bug-line: 49
