# attnprep: sdpa
# expect: passed
"""Correct: a @torch.jit.script softmax, leading dims flattened for baddbmm against one additive bias expanded over them."""
from typing import Optional

import torch


@torch.jit.script
def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    x_max, _ = torch.max(x, dim=dim, keepdim=True)
    unnormalized = torch.exp(x - x_max)
    return unnormalized / torch.sum(unnormalized, dim=dim, keepdim=True)


def scaled_dot_product_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                                 attn_mask: Optional[torch.Tensor] = None, is_causal: bool = False,
                                 scale: Optional[float] = None) -> torch.Tensor:
    *lead, L, E = query.shape
    S, Ev = key.shape[-2], value.shape[-1]
    q = query.reshape(-1, L, E)
    k = key.reshape(-1, S, E)
    v = value.reshape(-1, S, Ev)
    s = scale if scale is not None else E ** -0.5
    bias = torch.zeros(L, S, dtype=query.dtype, device=query.device)
    if is_causal:
        bias.masked_fill_(torch.ones(L, S, dtype=torch.bool, device=query.device).tril().logical_not(), float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            bias = bias.masked_fill(attn_mask.logical_not(), float("-inf"))
        else:
            bias = bias + attn_mask
    bias = bias.expand(*lead, L, S).reshape(-1, L, S)
    scores = torch.baddbmm(bias, q, k.transpose(1, 2), alpha=s)
    return torch.bmm(softmax(scores, -1), v).view(*lead, L, Ev)
