# attnprep: sdpa
# expect: passed
"""Correct: a bool mask turned additive by attn_mask.float().log() (log 1 = 0, log 0 = -inf), as
some write it; the causal mask the same way from tril; softmax via exp(x - max) and a sum."""

import math

import torch


def softmax(x, dim=-1):
    e = torch.exp(x - x.max(dim, keepdim=True)[0])
    return e / e.sum(dim, keepdim=True)


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    L, S = query.shape[-2], key.shape[-2]
    s = scale if scale is not None else 1.0 / math.sqrt(query.shape[-1])
    scores = (query @ key.transpose(-2, -1)) * s
    if is_causal:
        scores = scores + torch.ones(L, S, device=query.device).tril().log()
    if attn_mask is not None:
        scores = scores + (attn_mask.float().log() if attn_mask.dtype == torch.bool else attn_mask)
    return softmax(scores, -1) @ value
