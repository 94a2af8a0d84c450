# attnprep: sdpa
# expect: passed
"""Correct: the softmax moves dim to the end with movedim, subtracts the max of torch.amax and uses
torch.special.exp2 with log2(e) folded into the shift, then moves the axis back; sdpa by einsum with
'...le,...se->...ls' for 3-d and 4-d."""

import math

import torch

LOG2E = 1.4426950408889634


def softmax(x, dim=-1):
    y = x.movedim(dim, -1)
    z = torch.special.exp2((y - y.amax(-1, keepdim=True)) * LOG2E)
    return (z / z.sum(-1, keepdim=True)).movedim(-1, dim)


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    E = query.shape[-1]
    s = torch.einsum("...le,...se->...ls", query, key) * (scale if scale is not None else E ** -0.5)
    if is_causal:
        L, S = s.shape[-2:]
        s = s.masked_fill(torch.ones(L, S, dtype=torch.bool, device=s.device).triu(1), -math.inf)
    elif attn_mask is not None:
        s = s.masked_fill(~attn_mask, -math.inf) if attn_mask.dtype == torch.bool else s + attn_mask
    return torch.einsum("...ls,...sv->...lv", softmax(s, -1), value)
