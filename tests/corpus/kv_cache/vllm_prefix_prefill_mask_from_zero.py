# attnprep: kv_cache
# expect: wrong_output
# diagnosis: cache_mask_not_offset
"""vLLM's context_attention_fwd reference (prefix prefill) by hand: the cached context and the new
tokens are concatenated, but the causal mask over them is torch.tril(ones(T, S)) without the
context length as its diagonal, so new token t sees keys 0..t instead of 0..context_len + t."""

import torch
import torch.nn as nn


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.num_heads, self.num_kv_heads = num_heads, num_kv_heads
        self.head_size = d_model // num_heads
        self.scale = self.head_size ** -0.5
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_size)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_size)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, cache=None):
        B, query_len, C = x.shape
        query = self.q_proj(x).view(B, query_len, self.num_heads, self.head_size).transpose(1, 2)
        key = self.k_proj(x).view(B, query_len, self.num_kv_heads, self.head_size).transpose(1, 2)
        value = self.v_proj(x).view(B, query_len, self.num_kv_heads, self.head_size).transpose(1, 2)
        if cache is not None:
            key = torch.cat((cache[0], key), dim=2)
            value = torch.cat((cache[1], value), dim=2)
        seq_len = key.shape[2]
        n_rep = self.num_heads // self.num_kv_heads
        k_full = key.repeat_interleave(n_rep, dim=1)
        v_full = value.repeat_interleave(n_rep, dim=1)
        attn = torch.einsum("bhqd,bhkd->bhqk", query, k_full) * self.scale
        causal = torch.tril(torch.ones(query_len, seq_len, dtype=torch.bool, device=x.device))
        attn = attn.masked_fill(~causal, torch.finfo(attn.dtype).min)
        attn = torch.softmax(attn, dim=-1)
        out = torch.einsum("bhqk,bhkd->bqhd", attn, v_full).reshape(B, query_len, C)
        return self.o_proj(out), (key, value)
# bug-line: 36
