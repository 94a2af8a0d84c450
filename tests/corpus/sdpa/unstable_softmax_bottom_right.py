# attnprep: sdpa
# expect: mask_leak
# diagnosis: causal_bottom_right + softmax_unstable
"""Two objects, a slip in each: softmax exponentiates without subtracting the max (overflow on large
scores), and is_causal is aligned at the last key (tril(diagonal=S - L)) instead of top-left."""

import math

import torch


def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    e = torch.exp(x)
    return e / e.sum(dim=dim, keepdim=True)


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    L, S = query.size(-2), key.size(-2)
    scale_factor = 1 / math.sqrt(query.size(-1)) if scale is None else scale
    attn_bias = torch.zeros(L, S, dtype=query.dtype, device=query.device)
    if is_causal:
        temp_mask = torch.ones(L, S, dtype=torch.bool, device=query.device).tril(diagonal=S - L)
        attn_bias.masked_fill_(temp_mask.logical_not(), float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            attn_bias = attn_bias.masked_fill(attn_mask.logical_not(), float("-inf"))
        else:
            attn_bias = attn_mask + attn_bias
    attn_weight = query @ key.transpose(-2, -1) * scale_factor
    attn_weight = attn_weight + attn_bias
    attn_weight = softmax(attn_weight, dim=-1)
    return attn_weight @ value
# bug-line: 13, 22
