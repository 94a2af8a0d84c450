# attnprep: sdpa
# expect: mask_leak
# diagnosis: bool_mask_inverted + scale_argument_ignored
"""Phi-style: the scale argument is never read (always 1/sqrt(E)) and a bool mask is filled where it is
True (inverted). The softmax is right."""

import math

import torch


def softmax(x, dim=-1):
    x = x - x.max(dim=dim, keepdim=True).values
    x = x.exp()
    return x / x.sum(dim=dim, keepdim=True)


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    head_dim = query.size(-1)
    attn_weights = torch.matmul(query, key.transpose(-1, -2)) / math.sqrt(head_dim)
    if is_causal:
        causal = torch.ones(attn_weights.shape[-2:], dtype=torch.bool, device=query.device).tril()
        attn_weights = attn_weights.masked_fill(~causal, float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            attn_weights = attn_weights.masked_fill(attn_mask, float("-inf"))
        else:
            attn_weights = attn_weights + attn_mask
    return torch.matmul(softmax(attn_weights, dim=-1), value)
