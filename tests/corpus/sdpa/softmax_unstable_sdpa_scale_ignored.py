# attnprep: sdpa
# expect: wrong_output
# diagnosis: softmax_unstable + scale_argument_ignored
"""Two objects, two mistakes: softmax without the max subtraction (overflows at 1e4) AND scaled_dot_product_attention ignores its scale argument (always 1/sqrt(E))."""

import math

import torch


def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    e = torch.exp(x)
    return e / e.sum(dim=dim, keepdim=True)


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    L, S = query.size(-2), key.size(-2)
    s = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))
    if is_causal:
        s = s.masked_fill(~torch.ones(L, S, dtype=torch.bool, device=query.device).tril(), float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            s = s.masked_fill(~attn_mask, float("-inf"))
        else:
            s = s + attn_mask
    m = s.amax(dim=-1, keepdim=True)
    p = torch.exp(s - m)
    return (p / p.sum(-1, keepdim=True)) @ value
# bug-line: 12, 18
