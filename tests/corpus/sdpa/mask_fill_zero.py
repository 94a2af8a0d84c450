# attnprep: sdpa
# expect: mask_leak
# diagnosis: mask_fill_zero
"""Masked scores set to 0 instead of -inf (the float mask is added)."""

import math

import torch


def softmax(x, dim=-1):
    m = x.max(dim=dim, keepdim=True).values
    e = torch.exp(x - m)
    return e / e.sum(dim=dim, keepdim=True)


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    L, S = query.size(-2), key.size(-2)
    scale_factor = 1 / math.sqrt(query.size(-1)) if scale is None else scale
    attn_bias = torch.zeros(L, S, dtype=query.dtype, device=query.device)
    if is_causal:
        temp_mask = torch.ones(L, S, dtype=torch.bool, device=query.device).tril(diagonal=0)
    if attn_mask is not None and attn_mask.dtype != torch.bool:
        attn_bias = attn_bias + attn_mask
    attn_weight = query @ key.transpose(-2, -1) * scale_factor
    attn_weight = attn_weight + attn_bias
    if is_causal:
        attn_weight = attn_weight.masked_fill(~temp_mask, 0.0)
    if attn_mask is not None and attn_mask.dtype == torch.bool:
        attn_weight = attn_weight.masked_fill(~attn_mask, 0.0)
    attn_weight = softmax(attn_weight, dim=-1)
    return attn_weight @ value
