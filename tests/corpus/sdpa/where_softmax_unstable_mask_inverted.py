# attnprep: sdpa
# expect: mask_leak
# diagnosis: softmax_unstable + bool_mask_inverted
"""softmax exponentiates without the row max (overflows on large scores), and the bool mask is read
as True = masked out, through torch.where."""

import math

import torch


def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    e = torch.exp(x)
    return e / e.sum(dim, keepdim=True)


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    E = query.shape[-1]
    s = scale if scale is not None else E ** -0.5
    scores = torch.einsum("...le,...se->...ls", query, key) * s
    neg = torch.tensor(float("-inf"), dtype=scores.dtype, device=scores.device)
    if is_causal:
        L, S = scores.shape[-2:]
        keep = torch.ones(L, S, dtype=torch.bool, device=scores.device).tril()
        scores = torch.where(keep, scores, neg)
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            scores = torch.where(attn_mask, neg, scores)
        else:
            scores = scores + attn_mask
    return torch.einsum("...ls,...sv->...lv", softmax(scores, -1), value)
