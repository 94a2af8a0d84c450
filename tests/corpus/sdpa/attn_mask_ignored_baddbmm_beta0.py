# attnprep: sdpa
# expect: mask_leak
# diagnosis: attn_mask_ignored
"""torch.baddbmm(bias, q, kᵀ, beta=0.0, ...): beta=0 drops the input, so the attn_mask folded into
bias is never applied (the causal mask is filled separately, so it still works)."""

import math

import torch


def softmax(x, dim=-1):
    m = x.max(dim=dim, keepdim=True).values
    e = torch.exp(x - m)
    return e / e.sum(dim=dim, keepdim=True)


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    *lead, L, E = query.shape
    S, Ev = key.shape[-2], value.shape[-1]
    alpha = 1.0 / math.sqrt(E) if scale is None else scale
    bias = torch.zeros(*lead, L, S, dtype=query.dtype, device=query.device)
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            bias = bias.masked_fill(~attn_mask, float("-inf"))
        else:
            bias = bias + attn_mask
    q = query.reshape(-1, L, E)
    k = key.reshape(-1, S, E)
    scores = torch.baddbmm(bias.reshape(-1, L, S), q, k.transpose(1, 2), beta=0.0, alpha=alpha)
    if is_causal:
        scores = scores.masked_fill(torch.ones(L, S, dtype=torch.bool, device=query.device).triu(1), float("-inf"))
    p = softmax(scores, dim=-1)
    return torch.bmm(p, value.reshape(-1, S, Ev)).reshape(*lead, L, Ev)
