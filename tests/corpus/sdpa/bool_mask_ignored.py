# attnprep: sdpa
# expect: mask_leak
# diagnosis: bool_mask_ignored
"""Hugging Face hands SDPA float masks, so only the float branch was written: a bool mask does nothing."""

import math

import torch


def softmax(x, dim=-1):
    m = x.max(dim=dim, keepdim=True).values
    e = torch.exp(x - m)
    return e / e.sum(dim=dim, keepdim=True)


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    L, S = query.size(-2), key.size(-2)
    scale_factor = 1 / math.sqrt(query.size(-1)) if scale is None else scale
    scores = query @ key.transpose(-2, -1) * scale_factor
    if is_causal:
        scores = scores.masked_fill(~torch.ones(L, S, dtype=torch.bool, device=query.device).tril(), float("-inf"))
    if attn_mask is not None and attn_mask.is_floating_point():
        scores = scores + attn_mask
    return softmax(scores) @ value
