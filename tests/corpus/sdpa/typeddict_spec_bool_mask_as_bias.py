# attnprep: sdpa
# expect: mask_leak
# diagnosis: bool_mask_added
"""A TypedDict `AttnSpec` built from the arguments, the mask turned into a bias by a single
`as_bias()` that handles float masks right and bool masks by `mask.to(scores.dtype)` (adds 1 where
attention is allowed, 0 where it is blocked): float-mask and causal cases are right, every
bool-mask case lets the blocked keys through."""

import math
from typing import Optional, TypedDict

import torch


class AttnSpec(TypedDict):
    scale: float
    mask: Optional[torch.Tensor]
    causal: bool


def softmax(x, dim=-1):
    e = (x - x.amax(dim=dim, keepdim=True)).exp()
    return e / e.sum(dim=dim, keepdim=True)


def as_bias(mask, scores):
    return mask.to(scores.dtype)


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    spec: AttnSpec = {"scale": scale if scale is not None else query.shape[-1] ** -0.5, "mask": attn_mask, "causal": is_causal}
    scores = query @ key.transpose(-2, -1) * spec["scale"]
    if spec["causal"]:
        L, S = scores.shape[-2:]
        scores = scores.masked_fill(torch.ones(L, S, dtype=torch.bool, device=scores.device).triu(1), -math.inf)
    elif spec["mask"] is not None:
        scores = scores + as_bias(spec["mask"], scores)
    return softmax(scores, dim=-1) @ value
# bug-line: 27
