# attnprep: kv_cache
# expect: wrong_output
# diagnosis: cache_mask_not_offset
"""SGLang's radix-cache habits in names: the cached part is the request's matched prefix
(prefix_len, prefix_k / prefix_v), the new part the extend (extend_len), req_to_token-like
bookkeeping kept as comments; the extend's causal mask built as the square tril of extend_len
alone, padded with ones for the prefix on the left, but the square starts at the prefix's first
column instead of after it."""
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

    def extend_mask(self, prefix_len, extend_len, device):
        total = prefix_len + extend_len
        rows = torch.arange(extend_len, device=device)[:, None]  # extend positions, 0-based
        cols = torch.arange(total, device=device)[None, :]
        return cols <= rows  # (extend_len, prefix_len + extend_len)

    def forward(self, x, cache=None):
        bsz, extend_len, _ = x.shape
        q = self.q_proj(x).view(bsz, extend_len, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(bsz, extend_len, self.num_kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(bsz, extend_len, self.num_kv_heads, self.head_dim).transpose(1, 2)
        if cache is not None:
            prefix_k, prefix_v = cache  # matched prefix of the radix tree
            k = torch.cat([prefix_k, k], dim=2)
            v = torch.cat([prefix_v, v], dim=2)
        prefix_len = k.shape[2] - extend_len
        new_cache = (k, v)
        groups = self.num_heads // self.num_kv_heads
        k_full = k.repeat_interleave(groups, dim=1)
        v_full = v.repeat_interleave(groups, dim=1)
        scores = q @ k_full.transpose(-1, -2) / math.sqrt(self.head_dim)
        allowed = self.extend_mask(prefix_len, extend_len, x.device)
        scores = scores.masked_fill(~allowed, float("-inf"))
        out = scores.softmax(-1) @ v_full
        out = out.transpose(1, 2).reshape(bsz, extend_len, -1)
        return self.o_proj(out), new_cache
# bug-line: 28
