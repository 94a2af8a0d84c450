# attnprep: sdpa
# expect: mask_leak
# diagnosis: float_mask_multiplied
"""Bool masks are right; a float mask is 'applied' by multiplying the scores with it."""

import math

import torch


def softmax(x, dim=-1):
    x = x - x.amax(dim=dim, keepdim=True)
    return x.exp() / x.exp().sum(dim=dim, keepdim=True)


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    L, S, E = query.shape[-2], key.shape[-2], query.shape[-1]
    scores = query @ key.transpose(-2, -1) * (scale if scale is not None else E ** -0.5)
    if is_causal:
        causal = torch.ones(L, S, dtype=torch.bool, device=query.device).tril()
        scores = scores.masked_fill(~causal, float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            scores = scores.masked_fill(~attn_mask, float("-inf"))
        else:
            scores = scores * attn_mask
    return softmax(scores) @ value
# bug-line: 26
