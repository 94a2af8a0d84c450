# attnprep: sdpa
# expect: passed
"""A softmax from amax / exp / sum with a guard for all -inf rows, masks as one additive bias built with
torch.where, for 3-D and 4-D inputs alike: correct."""

import math

import torch


def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    shift = x.amax(dim=dim, keepdim=True).detach()
    shift = torch.where(torch.isfinite(shift), shift, torch.zeros_like(shift))
    num = (x - shift).exp()
    return num / num.sum(dim=dim, keepdim=True)


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    scores = torch.matmul(query, key.transpose(-1, -2)) * scale  # (..., L, S)
    L, S = scores.shape[-2], scores.shape[-1]
    bias = torch.zeros_like(scores)
    if is_causal:
        keep = torch.ones(L, S, dtype=torch.bool, device=scores.device).tril()
        bias = torch.where(keep, bias, torch.full_like(bias, float("-inf")))
    elif attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            bias = torch.where(attn_mask, bias, torch.full_like(bias, float("-inf")))
        else:
            bias = bias + attn_mask
    return torch.matmul(softmax(scores + bias, dim=-1), value)
