# attnprep: sdpa
# expect: mask_leak
# diagnosis: bool_mask_inverted
"""torch.where(attn_mask, -inf, scores): the bool mask read as 'True = masked out'."""

import math

import torch


def softmax(x, dim=-1):
    m = x.amax(dim=dim, keepdim=True)
    e = (x - m).exp()
    return e / e.sum(dim=dim, keepdim=True)


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    s = scale or 1 / math.sqrt(query.size(-1))
    scores = torch.einsum("...qd,...kd->...qk", query, key) * s
    neg = torch.full_like(scores, float("-inf"))
    if is_causal:
        L, S = scores.shape[-2:]
        scores = torch.where(torch.ones(L, S, dtype=torch.bool, device=scores.device).tril(), scores, neg)
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            scores = torch.where(attn_mask, neg, scores)
        else:
            scores = scores + attn_mask
    return torch.einsum("...qk,...kd->...qd", softmax(scores), value)
# bug-line: 26
