# attnprep: sdpa
# expect: error
"""Type-hinted SDPA whose softmax takes the row max without keepdim: (..., L) does not broadcast
against (..., L, S) when L != S (and subtracts another row's max when L == S)."""

import math
from typing import Optional

import torch
from torch import Tensor


def softmax(x: Tensor, dim: int = -1) -> Tensor:
    row_max: Tensor = x.amax(dim=dim)
    shifted: Tensor = x - row_max
    numer: Tensor = shifted.exp()
    return numer / numer.sum(dim=dim, keepdim=True)


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask: Optional[Tensor] = None,
                                 is_causal: bool = False, scale: Optional[float] = None) -> Tensor:
    L: int = query.shape[-2]
    S: int = key.shape[-2]
    factor: float = scale if scale is not None else 1.0 / math.sqrt(query.shape[-1])
    bias: Tensor = torch.zeros(L, S, dtype=query.dtype, device=query.device)
    if is_causal:
        bias = bias.masked_fill(torch.ones(L, S, dtype=torch.bool, device=query.device).tril().logical_not(), -math.inf)
    if attn_mask is not None:
        bias = bias.masked_fill(attn_mask.logical_not(), -math.inf) if attn_mask.dtype == torch.bool else bias + attn_mask
    logits: Tensor = torch.matmul(query, key.transpose(-2, -1)) * factor + bias
    return torch.matmul(softmax(logits, dim=-1), value)
# bug-line: 14
