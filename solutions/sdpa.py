"""Scaled dot-product attention with a hand-written, numerically stable softmax.

softmax subtracts the row maximum before exp: softmax(x) = softmax(x - c) for any c constant along
the dim, and with c = max every exponent is <= 0, so exp never overflows (float32's exp overflows
above ~88.7) and the largest term is exactly 1, so the sum never underflows to 0. A -inf entry gives
exp(-inf) = 0 as long as its row has a finite entry.

scaled_dot_product_attention follows torch.nn.functional.scaled_dot_product_attention (without
dropout): query (..., L, E), key (..., S, E), value (..., S, Ev) -> (..., L, Ev). attn_mask is bool
(True = may attend) or float (added to the scores), broadcastable to (..., L, S); is_causal masks
key j > query i, aligned top-left as torch does (torch.ones(L, S).tril()); scale defaults to
1 / sqrt(E).
"""

import math

import torch


def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """exp(x - max) / sum(exp(x - max)) along dim; equals torch.softmax on any finite input."""
    x_max = x.amax(dim=dim, keepdim=True)  # (..., 1, ...): the largest entry along dim
    e = torch.exp(x - x_max)  # every exponent <= 0: no overflow, the max term is exp(0) = 1
    return e / e.sum(dim=dim, keepdim=True)  # rows sum to 1 along dim


def scaled_dot_product_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attn_mask: torch.Tensor | None = None,
    is_causal: bool = False,
    scale: float | None = None,
) -> torch.Tensor:
    """softmax(query·keyᵀ · scale + mask)·value, as torch's SDPA with dropout_p=0."""
    L, S = query.size(-2), key.size(-2)
    scale_factor = 1 / math.sqrt(query.size(-1)) if scale is None else scale  # 1/sqrt(E), not 1/sqrt(Ev)
    attn_bias = torch.zeros(L, S, dtype=query.dtype, device=query.device)  # (L, S), added to the scores
    if is_causal:
        allowed = torch.ones(L, S, dtype=torch.bool, device=query.device).tril()  # top-left: key j <= query i
        attn_bias = attn_bias.masked_fill(~allowed, float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            attn_bias = attn_bias.masked_fill(~attn_mask, float("-inf"))  # True = may attend; broadcasts to (..., L, S)
        else:
            attn_bias = attn_bias + attn_mask  # a float mask is added to the scores
    scores = query @ key.transpose(-2, -1) * scale_factor  # (..., L, E) @ (..., E, S) -> (..., L, S)
    attn = softmax(scores + attn_bias, dim=-1)  # (..., L, S): each query's weights over the S keys
    return attn @ value  # (..., L, S) @ (..., S, Ev) -> (..., L, Ev)
