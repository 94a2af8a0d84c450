# attnprep: sdpa
# expect: mask_leak
# diagnosis: causal_leaks_next
"""The causal mask from aranges with j > i + 1 (off by one: the next key is visible)."""

import math

import torch


def softmax(x, dim=-1):
    e = torch.exp(x - x.max(dim=dim, keepdim=True).values)
    return e / e.sum(dim=dim, keepdim=True)


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    L, S = query.size(-2), key.size(-2)
    scale = 1 / math.sqrt(query.size(-1)) if scale is None else scale
    w = torch.einsum("...le,...se->...ls", query, key) * scale
    if is_causal:
        i = torch.arange(L, device=w.device).view(L, 1)
        j = torch.arange(S, device=w.device).view(1, S)
        w = w.masked_fill(j > i + 1, float("-inf"))
    if attn_mask is not None:
        w = w.masked_fill(~attn_mask, float("-inf")) if attn_mask.dtype == torch.bool else w + attn_mask
    return torch.einsum("...ls,...sv->...lv", softmax(w), value)
# bug-line: 23
