# attnprep: sdpa
# expect: wrong_output
# diagnosis: softmax_wrong_dim
"""softmax(scores, dim=1): over the heads of a 4-D input (and the queries of a 3-D one)."""

import math

import torch


def softmax(x, dim=-1):
    e = torch.exp(x - x.amax(dim=dim, keepdim=True))
    return e / e.sum(dim=dim, keepdim=True)


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    L, S = query.size(-2), key.size(-2)
    scores = torch.matmul(query, key.transpose(-2, -1)) * (scale or 1 / math.sqrt(query.size(-1)))
    if is_causal:
        scores = scores.masked_fill(torch.ones(L, S, dtype=torch.bool, device=query.device).triu(1), float("-inf"))
    if attn_mask is not None:
        scores = scores.masked_fill(~attn_mask, float("-inf")) if attn_mask.dtype == torch.bool else scores + attn_mask
    return torch.matmul(softmax(scores, dim=1), value)
