# attnprep: sdpa
# expect: passed
"""Correct: flatten the leading dims and use bmm (3-D and 4-D alike), the mask broadcast first; the
softmax divides by a sum computed with torch.sum over the dim."""

import math

import torch


def softmax(x, dim=-1):
    dim = dim % x.dim()
    z = x - torch.amax(x, dim=dim, keepdim=True)
    ez = torch.exp(z)
    return ez / torch.sum(ez, dim=dim, keepdim=True)


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    *lead, L, E = query.shape
    S, Ev = key.shape[-2], value.shape[-1]
    q = query.reshape(-1, L, E)
    k = key.reshape(-1, S, E)
    v = value.reshape(-1, S, Ev)
    scores = torch.bmm(q, k.transpose(1, 2)) * (scale if scale is not None else 1 / math.sqrt(E))  # (N, L, S)
    bias = torch.zeros(*lead, L, S, dtype=query.dtype, device=query.device)
    if is_causal:
        bias = bias.masked_fill(torch.ones(L, S, dtype=torch.bool, device=query.device).tril() == 0, float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            bias = bias.masked_fill(~attn_mask, float("-inf"))
        else:
            bias = bias + attn_mask
    probs = softmax(scores + bias.reshape(-1, L, S), dim=-1)
    return torch.bmm(probs, v).reshape(*lead, L, Ev)
