# attnprep: sdpa
# expect: passed
"""Correct: the leading dims flattened with math.prod for torch.bmm (3-d and 4-d alike), the mask
kind told by a typing.Literal helper ("bool" / "float" / "none"), the bool mask turned into an additive
-inf bias, the softmax hand-written with amax, scale given or 1/sqrt(E)."""

import math
from typing import Literal, Optional

import torch


def softmax(x, dim=-1):
    e = torch.exp(x - x.amax(dim=dim, keepdim=True))
    return e / e.sum(dim=dim, keepdim=True)


def _kind(mask) -> Literal["bool", "float", "none"]:
    if mask is None:
        return "none"
    return "bool" if mask.dtype == torch.bool else "float"


def scaled_dot_product_attention(query, key, value, attn_mask: Optional[torch.Tensor] = None, is_causal=False, scale=None):
    *batch, L, E = query.shape
    S, Ev = key.shape[-2], value.shape[-1]
    n = math.prod(batch)
    s = torch.bmm(query.reshape(n, L, E), key.reshape(n, S, E).transpose(1, 2)).view(*batch, L, S)
    s = s * (1.0 / math.sqrt(E) if scale is None else scale)
    kind = _kind(attn_mask)
    if kind == "bool":
        s = s + torch.zeros_like(attn_mask, dtype=s.dtype).masked_fill(~attn_mask, float("-inf"))
    elif kind == "float":
        s = s + attn_mask
    if is_causal:
        s = s.masked_fill(torch.ones(L, S, dtype=torch.bool, device=s.device).tril().logical_not(), float("-inf"))
    p = softmax(s, dim=-1)
    return torch.bmm(p.reshape(n, L, S), value.reshape(n, S, Ev)).view(*batch, L, Ev)
