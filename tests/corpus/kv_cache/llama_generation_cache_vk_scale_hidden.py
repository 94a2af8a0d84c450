# attnprep: kv_cache
# expect: wrong_output
# diagnosis: cache_kv_swapped + scale_d_model
"""Meta llama's generation.py / model.py habits: a `past_key_values`-free call that returns
(output, (cache_k, cache_v)), start_pos computed from the cache, a float additive mask from
torch.full(-inf).triu(start_pos + 1) as Llama builds it, scores divided by a stored `self.norm`.
Two slips: the cache tuple is returned as (values, keys), and the norm is sqrt(dim) of the whole
model width."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.n_heads, self.n_kv_heads = num_heads, num_kv_heads
        self.n_rep = num_heads // num_kv_heads
        self.head_dim = d_model // num_heads
        self.norm = math.sqrt(d_model)
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.wv = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, x, cache=None):
        bsz, seqlen, _ = x.shape
        start_pos = 0 if cache is None else cache[0].shape[2]
        xq = self.wq(x).view(bsz, seqlen, self.n_heads, self.head_dim).transpose(1, 2)
        xk = self.wk(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim).transpose(1, 2)
        xv = self.wv(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim).transpose(1, 2)
        if cache is not None:
            xk = torch.cat((cache[0], xk), dim=2)
            xv = torch.cat((cache[1], xv), dim=2)
        keys = xk.repeat_interleave(self.n_rep, dim=1)
        values = xv.repeat_interleave(self.n_rep, dim=1)
        mask = torch.full((seqlen, start_pos + seqlen), float("-inf"), device=x.device).triu(start_pos + 1)
        scores = torch.matmul(xq, keys.transpose(2, 3)) / self.norm + mask.to(xq.dtype)
        scores = F.softmax(scores.float(), dim=-1).type_as(xq)
        output = torch.matmul(scores, values).transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return self.wo(output), (xv, xk)
# bug-line: 23, 44
