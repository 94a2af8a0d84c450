# attnprep: sdpa
# expect: passed
"""Correct: functools.singledispatch-free dtype dispatch through a dict of mask handlers, type hints everywhere,
the softmax's max computed with torch.max over a detached tensor."""
from __future__ import annotations

import math
from typing import Callable, Optional

import torch
from torch import Tensor


def softmax(x: Tensor, dim: int = -1) -> Tensor:
    peak: Tensor = torch.max(x, dim=dim, keepdim=True).values.detach()
    num: Tensor = torch.exp(x - peak)
    return num / num.sum(dim=dim, keepdim=True)


def _bool(scores: Tensor, mask: Tensor) -> Tensor:
    return scores.masked_fill(mask.logical_not(), -math.inf)


def _float(scores: Tensor, mask: Tensor) -> Tensor:
    return scores + mask


HANDLERS: dict[bool, Callable[[Tensor, Tensor], Tensor]] = {True: _bool, False: _float}


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask: Optional[Tensor] = None,
                                 is_causal: bool = False, scale: Optional[float] = None) -> Tensor:
    scale_: float = (1.0 / math.sqrt(query.shape[-1])) if scale is None else float(scale)
    scores: Tensor = torch.einsum("...le,...se->...ls", query, key) * scale_
    if is_causal:
        L, S = scores.shape[-2:]
        scores = _bool(scores, torch.tril(torch.ones(L, S, dtype=torch.bool, device=scores.device)))
    if attn_mask is not None:
        scores = HANDLERS[attn_mask.dtype == torch.bool](scores, attn_mask)
    return torch.einsum("...ls,...sv->...lv", softmax(scores), value)
