# attnprep: kv_cache
# expect: passed
"""Correct: llama2.c / Meta's attention: (B, T, H, D) layout, repeat_kv by expand, the new tokens' mask torch.hstack([zeros(T, T_past), triu(-inf)])."""
import math

import torch
import torch.nn.functional as F
from torch import nn


def repeat_kv(x: torch.Tensor, n_rep: int) -> torch.Tensor:
    """torch.repeat_interleave(x, dim=2, repeats=n_rep) — llama2.c / Meta layout (bs, slen, n_kv_heads, head_dim)."""
    bs, slen, n_kv_heads, head_dim = x.shape
    if n_rep == 1:
        return x
    return x[:, :, :, None, :].expand(bs, slen, n_kv_heads, n_rep, head_dim).reshape(bs, slen, n_kv_heads * n_rep, head_dim)


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.n_heads, self.n_kv_heads = num_heads, num_kv_heads
        self.n_rep = num_heads // num_kv_heads
        self.head_dim = d_model // num_heads
        self.wq = nn.Linear(d_model, num_heads * self.head_dim)
        self.wk = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.wv = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.wo = nn.Linear(num_heads * self.head_dim, d_model)

    def forward(self, x, cache=None):
        bsz, seqlen, _ = x.shape
        xq = self.wq(x).view(bsz, seqlen, self.n_heads, self.head_dim)
        xk = self.wk(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim)
        xv = self.wv(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim)
        start_pos = 0
        if cache is not None:
            past_k, past_v = cache                                   # (B, Hkv, T_past, D)
            start_pos = past_k.shape[2]
            xk = torch.cat([past_k.transpose(1, 2), xk], dim=1)
            xv = torch.cat([past_v.transpose(1, 2), xv], dim=1)
        new_cache = (xk.transpose(1, 2), xv.transpose(1, 2))
        keys, values = repeat_kv(xk, self.n_rep), repeat_kv(xv, self.n_rep)
        xq, keys, values = xq.transpose(1, 2), keys.transpose(1, 2), values.transpose(1, 2)
        scores = torch.matmul(xq, keys.transpose(2, 3)) / math.sqrt(self.head_dim)
        mask = torch.full((seqlen, seqlen), float("-inf"), device=x.device)
        mask = torch.triu(mask, diagonal=1)
        # When performing key-value caching, we compute the attention scores only for the new sequence.
        mask = torch.hstack([torch.zeros((seqlen, start_pos), device=x.device), mask]).type_as(xq)
        scores = F.softmax((scores + mask).float(), dim=-1).type_as(xq)
        output = torch.matmul(scores, values).transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return self.wo(output), new_cache
