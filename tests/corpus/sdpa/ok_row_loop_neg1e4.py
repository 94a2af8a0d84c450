# attnprep: sdpa
# expect: passed
"""Correct, LeetCode style: one query row at a time in a Python loop, the causal row sliced, masks
filled with -1e4 (fp16-safe habit), type hints; softmax via transpose to the last dim."""

import math
from typing import Optional

import torch
from torch import Tensor


def softmax(x: Tensor, dim: int = -1) -> Tensor:
    t = x.transpose(dim, -1)
    m, _ = torch.max(t, dim=-1, keepdim=True)
    e = torch.exp(t - m)
    out = e / e.sum(dim=-1, keepdim=True)
    return out.transpose(dim, -1)


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor,
                                 attn_mask: Optional[Tensor] = None, is_causal: bool = False,
                                 scale: Optional[float] = None) -> Tensor:
    L = query.size(-2)
    S = key.size(-2)
    s = scale if scale is not None else query.size(-1) ** -0.5
    rows = []
    for i in range(L):
        qi = query[..., i:i + 1, :]                      # (..., 1, E)
        sc = (qi @ key.transpose(-1, -2)) * s            # (..., 1, S)
        if is_causal and i + 1 < S:
            sc = torch.cat([sc[..., : i + 1], torch.full_like(sc[..., i + 1:], -1e4)], dim=-1)
        if attn_mask is not None:
            mi = attn_mask[..., i:i + 1, :] if attn_mask.size(-2) == L else attn_mask
            if mi.dtype == torch.bool:
                sc = sc.masked_fill(~mi, -1e4)
            else:
                sc = sc + mi
        rows.append(softmax(sc, -1) @ value)
    return torch.cat(rows, dim=-2)
