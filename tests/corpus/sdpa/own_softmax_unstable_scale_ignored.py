# attnprep: sdpa
# expect: wrong_output
# diagnosis: softmax_unstable + scale_argument_ignored
"""timm-style: scaled_dot_product_attention calls the file's own softmax, which skips the max subtraction, AND ignores its scale argument: the softmax's mistake shows in both objects, the attention's output needs both: the two are named together (sdpa's variants make two knobs at once since issue 24's held-out round)."""

import math

import torch


def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    ex = torch.exp(x)
    return ex / torch.sum(ex, dim=dim, keepdim=True)


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    L, S = query.size(-2), key.size(-2)
    attn = (query @ key.transpose(-2, -1)) * (1.0 / math.sqrt(query.size(-1)))
    bias = torch.zeros(L, S, dtype=query.dtype, device=query.device)
    if is_causal:
        bias = bias.masked_fill(torch.ones(L, S, dtype=torch.bool, device=query.device).tril().logical_not(), float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            bias = bias.masked_fill(attn_mask.logical_not(), float("-inf"))
        else:
            bias = bias + attn_mask
    return softmax(attn + bias, dim=-1) @ value
