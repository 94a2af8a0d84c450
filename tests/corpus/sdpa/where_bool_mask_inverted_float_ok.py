# attnprep: sdpa
# expect: mask_leak
# diagnosis: bool_mask_inverted
"""torch.where everywhere; a float attn_mask is added as it should be, but a bool one is read as
True = blocked. Shows only in the cases with a bool mask."""

import math

import torch


def softmax(x, dim=-1):
    m = x.amax(dim=dim, keepdim=True)
    m = torch.where(torch.isinf(m), torch.zeros_like(m), m)
    e = torch.exp(x - m)
    return e / e.sum(dim=dim, keepdim=True)


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    E = query.shape[-1]
    s = (query @ key.transpose(-2, -1)) * (scale if scale is not None else 1.0 / math.sqrt(E))
    L, S = s.shape[-2:]
    if is_causal:
        s = torch.where(torch.ones(L, S, dtype=torch.bool, device=s.device).tril(), s, float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            s = torch.where(attn_mask, float("-inf"), s)
        else:
            s = s + attn_mask
    return softmax(s, dim=-1) @ value
# bug-line: 27
