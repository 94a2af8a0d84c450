# attnprep: sdpa
# expect: mask_leak
# diagnosis: float_mask_multiplied
"""xformers' reference path: flatten the leading dims, scores by torch.baddbmm; a float attn_mask is
multiplied into the scores instead of added (a bool mask is right)."""

import math

import torch


def softmax(x, dim=-1):
    m = x.amax(dim=dim, keepdim=True)
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    e = torch.exp(x - m)
    return e / e.sum(dim=dim, keepdim=True)


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    *lead, L, E = query.shape
    S, Ev = key.shape[-2], value.shape[-1]
    scale = 1.0 / math.sqrt(E) if scale is None else scale
    q = query.reshape(-1, L, E)
    k = key.reshape(-1, S, E)
    v = value.reshape(-1, S, Ev)
    bias = torch.zeros(q.shape[0], L, S, dtype=query.dtype, device=query.device)
    if is_causal:
        bias = bias.masked_fill(torch.ones(L, S, dtype=torch.bool, device=query.device).tril().logical_not(), float("-inf"))
    if attn_mask is not None and attn_mask.dtype == torch.bool:
        full = attn_mask.expand(*lead, L, S).reshape(-1, L, S)
        bias = bias.masked_fill(~full, float("-inf"))
    scores = torch.baddbmm(bias, q, k.transpose(1, 2), alpha=scale)
    if attn_mask is not None and attn_mask.dtype != torch.bool:
        scores = scores * attn_mask.expand(*lead, L, S).reshape(-1, L, S)
    out = torch.bmm(softmax(scores, dim=-1), v)
    return out.reshape(*lead, L, Ev)
# bug-line: 34
