# attnprep: sdpa
# expect: passed
"""Correct: (B*H) flattened, the masks folded into one additive bias and torch.baddbmm(bias, q, kᵀ,
alpha=scale) as Megatron does; softmax with movedim so any dim works."""

import math

import torch


def softmax(x, dim=-1):
    x = x.movedim(dim, -1)
    x = x - x.max(-1, keepdim=True)[0]
    x = x.exp()
    x = x / x.sum(-1, keepdim=True)
    return x.movedim(-1, dim)


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    L, E = query.shape[-2:]
    S, Ev = key.shape[-2], value.shape[-1]
    lead = query.shape[:-2]
    alpha = 1.0 / math.sqrt(E) if scale is None else scale
    bias = query.new_zeros(L, S)
    if is_causal:
        causal = torch.ones(L, S, dtype=torch.bool, device=query.device).tril()
        bias = bias.masked_fill(~causal, -1e9)
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            bias = bias.masked_fill(~attn_mask, -1e9)
        else:
            bias = bias + attn_mask
    bias = bias.expand(*lead, L, S).reshape(-1, L, S)
    q = query.reshape(-1, L, E)
    k = key.reshape(-1, S, E)
    v = value.reshape(-1, S, Ev)
    scores = torch.baddbmm(bias, q, k.transpose(1, 2), beta=1.0, alpha=alpha)
    p = softmax(scores, dim=-1)
    return torch.bmm(p, v).view(*lead, L, Ev)
