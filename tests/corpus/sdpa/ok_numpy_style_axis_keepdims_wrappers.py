# attnprep: sdpa
# expect: passed
"""Numpy-habit wrappers (amax / exp / sum with axis= and keepdims=, swapaxes, np-style where), the
mask handled as numpy users do, by np.where-like selection; 3-D and 4-D alike by ellipsis."""
import math

import torch


def _amax(a, axis, keepdims=True):
    return torch.amax(a, dim=axis, keepdim=keepdims)


def _sum(a, axis, keepdims=True):
    return torch.sum(a, dim=axis, keepdim=keepdims)


def softmax(x, dim=-1):
    shifted = x - _amax(x, axis=dim)
    ex = torch.exp(shifted)
    return ex / _sum(ex, axis=dim)


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    E = query.shape[-1]
    L, S = query.shape[-2], key.shape[-2]
    s = scale if scale is not None else 1.0 / math.sqrt(E)
    logits = torch.matmul(query, torch.swapaxes(key, -1, -2)) * s
    if is_causal:
        row = torch.arange(L, device=query.device)[:, None]
        col = torch.arange(S, device=query.device)[None, :]
        logits = torch.where(col <= row, logits, torch.full_like(logits, -math.inf))
    if attn_mask is not None:
        if attn_mask.dtype is torch.bool:
            logits = torch.where(attn_mask, logits, torch.full_like(logits, -math.inf))
        else:
            logits = logits + attn_mask
    return torch.matmul(softmax(logits, dim=-1), value)
