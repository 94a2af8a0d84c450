# attnprep: sdpa
# expect: mask_leak
# diagnosis: bool_mask_added + causal_bottom_right
"""typing.overload signatures for the mask kinds (bool mask, float mask, none), a to_additive helper
turning whichever mask arrives into an additive float bias, and the causal mask built by the same
helper from a bool tril; the softmax subtracts the row max."""
import math
from typing import Optional, overload

import torch
from torch import Tensor


def softmax(x: Tensor, dim: int = -1) -> Tensor:
    shifted = x - x.amax(dim=dim, keepdim=True)
    e = shifted.exp()
    return e / e.sum(dim=dim, keepdim=True)


@overload
def to_additive(mask: None, dtype: torch.dtype) -> None: ...
@overload
def to_additive(mask: Tensor, dtype: torch.dtype) -> Tensor: ...


def to_additive(mask, dtype):
    if mask is None:
        return None
    if mask.dtype == torch.bool:
        return mask.to(dtype)
    return mask.to(dtype)


def scaled_dot_product_attention(
    query: Tensor, key: Tensor, value: Tensor, attn_mask: Optional[Tensor] = None,
    is_causal: bool = False, scale: Optional[float] = None,
) -> Tensor:
    L, S, E = query.size(-2), key.size(-2), query.size(-1)
    scale_factor = 1.0 / math.sqrt(E) if scale is None else scale
    scores = query @ key.transpose(-2, -1) * scale_factor
    if is_causal:
        allowed = torch.ones(L, S, dtype=torch.bool, device=query.device).tril(diagonal=S - L)
        scores = scores + torch.zeros(L, S, dtype=scores.dtype, device=query.device).masked_fill(~allowed, float("-inf"))
    bias = to_additive(attn_mask, scores.dtype)
    if bias is not None:
        scores = scores + bias
    return softmax(scores, dim=-1) @ value
# bug-line: 30, 42
