# attnprep: sdpa
# expect: mask_leak
# diagnosis: bool_mask_inverted
"""torch.where style: a bool attn_mask (True = may attend) is used as the entries to block."""

import math

import torch


def softmax(x, dim=-1):
    x = x - x.max(dim=dim, keepdim=True).values
    ex = torch.exp(x)
    return ex / ex.sum(dim, keepdim=True)


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    L, S = query.size(-2), key.size(-2)
    scale = 1 / math.sqrt(query.size(-1)) if scale is None else scale
    scores = (query @ key.transpose(-2, -1)) * scale
    neg = torch.tensor(float("-inf"), dtype=scores.dtype, device=scores.device)
    if is_causal:
        keep = torch.ones(L, S, dtype=torch.bool, device=query.device).tril()
        scores = torch.where(keep, scores, neg)
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            scores = torch.where(attn_mask, neg, scores)
        else:
            scores = scores + attn_mask
    return softmax(scores, dim=-1) @ value
# bug-line: 27
