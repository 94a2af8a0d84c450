# attnprep: sdpa
# expect: passed
"""Correct: softmax over any dim by movedim; the attention's softmax taken over dim=-2 of the transposed scores."""
import math

import torch


def softmax(x, dim=-1):
    x = x.movedim(dim, -1)
    shifted = x - x.max(-1, keepdim=True)[0]
    num = shifted.exp()
    return (num / num.sum(-1, keepdim=True)).movedim(-1, dim)


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    scores = torch.matmul(query, key.transpose(-1, -2)).mul(scale)
    if is_causal:
        L, S = scores.shape[-2:]
        i = torch.arange(L, device=scores.device).unsqueeze(-1)
        j = torch.arange(S, device=scores.device).unsqueeze(0)
        scores = scores.masked_fill(j > i, -torch.inf)
    elif attn_mask is not None:
        if attn_mask.dtype is torch.bool:
            scores = scores.masked_fill(attn_mask.logical_not(), -torch.inf)
        else:
            scores = scores.add(attn_mask)
    # softmax over the keys, written as dim=-2 of the transposed scores
    return torch.matmul(softmax(scores.transpose(-1, -2), dim=-2).transpose(-1, -2), value)
