# attnprep: sdpa
# expect: passed
"""Type-hinted, einsum everywhere, masks with torch.where and finfo.min for bool masks, stable softmax
written with amax and a clamp for fully -inf rows."""

from __future__ import annotations

import math
from typing import Optional

import torch
from torch import Tensor


def softmax(x: Tensor, dim: int = -1) -> Tensor:
    m = x.amax(dim=dim, keepdim=True)
    m = torch.where(torch.isinf(m), torch.zeros_like(m), m)
    z = (x - m).exp()
    return z / z.sum(dim=dim, keepdim=True)


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask: Optional[Tensor] = None,
                                 is_causal: bool = False, scale: Optional[float] = None) -> Tensor:
    scale_factor: float = scale if scale is not None else 1.0 / math.sqrt(query.size(-1))
    logits = torch.einsum("...ie,...je->...ij", query, key) * scale_factor
    low = torch.finfo(logits.dtype).min
    if is_causal:
        i = torch.arange(logits.size(-2), device=query.device)[:, None]
        j = torch.arange(logits.size(-1), device=query.device)[None, :]
        logits = torch.where(j <= i, logits, low)
    if attn_mask is not None:
        logits = torch.where(attn_mask, logits, low) if attn_mask.dtype == torch.bool else logits + attn_mask
    return torch.einsum("...ij,...jv->...iv", softmax(logits), value)
