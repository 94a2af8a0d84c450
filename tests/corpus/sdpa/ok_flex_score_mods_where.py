# attnprep: sdpa
# expect: passed
"""Correct: score mods (bool mask through torch.where, float mask added) applied in turn; the softmax guards an all -inf row's max."""
import math
import torch


def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    m = x.amax(dim=dim, keepdim=True)
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))  # a row of -inf only: keep it NaN-free here
    e = torch.exp(x - m)
    return e / e.sum(dim=dim, keepdim=True)


def _bool_mod(mask):
    return lambda score: torch.where(mask, score, torch.full_like(score, float("-inf")))


def _float_mod(bias):
    return lambda score: score + bias


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    L, S = query.size(-2), key.size(-2)
    scale_factor = 1 / math.sqrt(query.size(-1)) if scale is None else scale
    mods = []
    if is_causal:
        mods.append(_bool_mod(torch.ones(L, S, dtype=torch.bool, device=query.device).tril(diagonal=0)))
    if attn_mask is not None:
        mods.append(_bool_mod(attn_mask) if attn_mask.dtype == torch.bool else _float_mod(attn_mask))
    score = (query @ key.transpose(-2, -1)) * scale_factor
    for mod in mods:
        score = mod(score)
    return softmax(score, dim=-1) @ value
