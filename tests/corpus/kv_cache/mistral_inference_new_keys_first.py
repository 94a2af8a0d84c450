# attnprep: kv_cache
# expect: wrong_output
# diagnosis: cache_prepended
"""mistral-inference habits (the xformers-free path): n_kv_heads, `repeat_kv(keys, values, repeats,
dim)` as mistral's one_file_ref writes it (repeat_interleave on both), xq / xk / xv names, a
`cache_k` / `cache_v` pair, scores by einsum. When a cache is given, the new keys and values are
concatenated in front of the cached ones."""

import math

import torch
import torch.nn as nn


def repeat_kv(keys, values, repeats, dim):
    keys = torch.repeat_interleave(keys, repeats=repeats, dim=dim)
    values = torch.repeat_interleave(values, repeats=repeats, dim=dim)
    return keys, values


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.n_heads, self.n_kv_heads = num_heads, num_kv_heads
        self.head_dim = d_model // num_heads
        self.repeats = num_heads // num_kv_heads
        self.scale = self.head_dim ** -0.5
        self.wq = nn.Linear(d_model, num_heads * self.head_dim)
        self.wk = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.wv = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.wo = nn.Linear(num_heads * self.head_dim, d_model)

    def forward(self, x, cache=None):
        bsz, seqlen, _ = x.shape
        xq = self.wq(x).view(bsz, seqlen, self.n_heads, self.head_dim).transpose(1, 2)
        xk = self.wk(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim).transpose(1, 2)
        xv = self.wv(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim).transpose(1, 2)
        if cache is not None:
            cache_k, cache_v = cache
            xk = torch.cat([xk, cache_k], dim=2)
            xv = torch.cat([xv, cache_v], dim=2)
        new_cache = (xk, xv)
        total = xk.shape[2]
        start = total - seqlen
        key, val = repeat_kv(xk, xv, self.repeats, dim=1)
        scores = torch.einsum("bhqd,bhkd->bhqk", xq, key) * self.scale
        pos_q = torch.arange(start, total, device=x.device)[:, None]
        pos_k = torch.arange(total, device=x.device)[None, :]
        scores = scores.masked_fill(pos_k > pos_q, float("-inf"))
        out = torch.einsum("bhqk,bhkd->bhqd", scores.softmax(-1), val)
        return self.wo(out.transpose(1, 2).reshape(bsz, seqlen, -1)), new_cache
# bug-line: 40, 41
