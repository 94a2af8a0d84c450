# attnprep: kv_cache
# expect: wrong_output
# diagnosis: cache_mask_not_offset
"""gpt-fast habits without its static buffers: `input_pos = torch.arange(T_past, T_past + T)`, a
KVCache-like `update(input_pos, k_val, v_val)` that grows the cache by torch.cat on the sequence
axis, `repeat_interleave(n_head // n_local_heads, dim=1)`, and, like Llama-1's model.py, an additive
float mask built only when more than one token comes in. The mask is full((T, S), -inf).triu(1): in
a chunk after a cache, new token t then sees keys 0 .. t only; one-token steps need no mask and are
right."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def kv_update(cache, input_pos, k_val, v_val):
    if cache is None:
        return k_val, v_val
    k_cache, v_cache = cache
    assert k_cache.shape[2] == input_pos[0].item()
    return torch.cat([k_cache, k_val], dim=2), torch.cat([v_cache, v_val], dim=2)


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.n_head = num_heads
        self.n_local_heads = num_kv_heads
        self.head_dim = d_model // num_heads
        self.dim = d_model
        kv = num_kv_heads * self.head_dim
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, kv)
        self.v_proj = nn.Linear(d_model, kv)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, cache=None):
        bsz, seqlen, _ = x.shape
        T_past = 0 if cache is None else cache[0].shape[2]
        input_pos = torch.arange(T_past, T_past + seqlen, device=x.device)

        q = self.q_proj(x).view(bsz, seqlen, self.n_head, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(bsz, seqlen, self.n_local_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(bsz, seqlen, self.n_local_heads, self.head_dim).transpose(1, 2)

        k, v = kv_update(cache, input_pos, k, v)
        new_cache = (k, v)
        S = k.shape[2]

        k = k.repeat_interleave(self.n_head // self.n_local_heads, dim=1)
        v = v.repeat_interleave(self.n_head // self.n_local_heads, dim=1)

        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)
        if seqlen > 1:
            mask = torch.full((seqlen, S), float("-inf"), device=x.device).triu(1)
            scores = scores + mask
        scores = F.softmax(scores.float(), dim=-1).type_as(q)
        y = torch.matmul(scores, v)
        y = y.transpose(1, 2).contiguous().view(bsz, seqlen, self.dim)
        return self.o_proj(y), new_cache
# bug-line: 57
