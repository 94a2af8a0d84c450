# attnprep: sdpa
# expect: passed
"""Correct: Stanford CS336 assignment-1 habits: a `softmax(in_features, dim)` that subtracts the max,
`run_*` adapters, jaxtyping-like shape strings as annotations ("Float[Tensor, '... queries d_k']"),
einsum for the products, a bool mask turned into a float bias with torch.where, a float mask added."""

from __future__ import annotations

import math

import torch
from torch import Tensor


def softmax(x: "Float[Tensor, '...']", dim: int = -1) -> "Float[Tensor, '...']":
    m = torch.amax(x, dim=dim, keepdim=True)
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    e = torch.exp(x - m)
    return e / torch.sum(e, dim=dim, keepdim=True)


def run_bias(mask: "Bool[Tensor, '... q k'] | Float[Tensor, '... q k']", like: Tensor) -> Tensor:
    if mask.dtype == torch.bool:
        return torch.where(mask, torch.zeros((), dtype=like.dtype, device=like.device),
                           torch.full((), float("-inf"), dtype=like.dtype, device=like.device))
    return mask.to(like.dtype)


def scaled_dot_product_attention(
    query: "Float[Tensor, '... queries d_k']",
    key: "Float[Tensor, '... keys d_k']",
    value: "Float[Tensor, '... keys d_v']",
    attn_mask=None,
    is_causal: bool = False,
    scale: float | None = None,
) -> "Float[Tensor, '... queries d_v']":
    d_k = query.shape[-1]
    s = scale if scale is not None else 1 / math.sqrt(d_k)
    pre = torch.einsum("...qd,...kd->...qk", query, key) * s
    if is_causal:
        L, S = pre.shape[-2:]
        pre = pre + run_bias(torch.ones(L, S, dtype=torch.bool, device=pre.device).tril(), pre)
    if attn_mask is not None:
        pre = pre + run_bias(attn_mask, pre)
    return torch.einsum("...qk,...kd->...qd", softmax(pre, dim=-1), value)
