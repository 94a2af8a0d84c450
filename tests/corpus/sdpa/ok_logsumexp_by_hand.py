# attnprep: sdpa
# expect: passed
"""Correct: the softmax written as exp(x - lse) with a hand-made log-sum-exp (max + log sum exp),
the causal mask as a comparison of aranges, and the scale applied to k."""

import math

import torch


def softmax(x, dim=-1):
    m = x.amax(dim=dim, keepdim=True)
    lse = m + torch.log(torch.exp(x - m).sum(dim=dim, keepdim=True))
    return torch.exp(x - lse)


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    E = query.shape[-1]
    L, S = query.shape[-2], key.shape[-2]
    sc = (1.0 / math.sqrt(E)) if scale is None else scale
    logits = query @ (key * sc).transpose(-2, -1)
    if is_causal:
        i = torch.arange(L, device=query.device)[:, None]
        j = torch.arange(S, device=query.device)[None, :]
        logits = logits.masked_fill(j > i, float("-inf"))
    if attn_mask is not None:
        logits = logits.masked_fill(~attn_mask, float("-inf")) if attn_mask.dtype == torch.bool else logits + attn_mask
    return softmax(logits, -1) @ value
