# attnprep: kv_cache
# expect: wrong_shape
# diagnosis: cache_chunk_unmasked + cache_not_returned
"""HF-style: the causal mask only on the prefill (cache is None), and the returned cache is the new
tokens' k, v only. The cache of the new tokens only is a wrong shape, named from what the call
returned; the unmasked chunk behind it is named with it, from the pair of the two that reproduces
the outputs of the right shapes and the wrong shapes alike."""

import math
import torch
import torch.nn as nn


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.num_heads, self.num_key_value_heads = num_heads, num_kv_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, num_heads * self.head_dim)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, cache=None):
        bsz, q_len, _ = x.shape
        q = self.q_proj(x).view(bsz, q_len, -1, self.head_dim).transpose(1, 2)
        k_new = self.k_proj(x).view(bsz, q_len, -1, self.head_dim).transpose(1, 2)
        v_new = self.v_proj(x).view(bsz, q_len, -1, self.head_dim).transpose(1, 2)
        k, v = k_new, v_new
        if cache is not None:
            k = torch.cat([cache[0], k_new], dim=-2)
            v = torch.cat([cache[1], v_new], dim=-2)
        n_rep = self.num_heads // self.num_key_value_heads
        k_r = k.repeat_interleave(n_rep, 1)
        v_r = v.repeat_interleave(n_rep, 1)
        w = torch.matmul(q, k_r.transpose(2, 3)) / math.sqrt(self.head_dim)
        if cache is None:
            w = w + torch.full((q_len, q_len), float("-inf"), device=x.device).triu(1)
        out = torch.matmul(w.softmax(-1), v_r).transpose(1, 2).reshape(bsz, q_len, -1)
        return self.o_proj(out), (k_new, v_new)
