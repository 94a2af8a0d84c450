# attnprep: sdpa
# expect: mask_leak
"""softmax divides by e.sum() without a dim: the sum of the whole tensor, not of each row (so the
future keys change the earlier rows: a causality leak)."""

import math

import torch


def softmax(x, dim=-1):
    e = torch.exp(x - x.max(dim=dim, keepdim=True).values)
    return e / e.sum()


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    scale = 1 / math.sqrt(query.shape[-1]) if scale is None else scale
    w = query @ key.transpose(-2, -1) * scale
    if is_causal:
        L, S = w.shape[-2:]
        w = w.masked_fill(torch.ones(L, S, dtype=torch.bool, device=w.device).triu(1), float("-inf"))
    if attn_mask is not None:
        w = w.masked_fill(~attn_mask, float("-inf")) if attn_mask.dtype == torch.bool else w + attn_mask
    return softmax(w) @ value
