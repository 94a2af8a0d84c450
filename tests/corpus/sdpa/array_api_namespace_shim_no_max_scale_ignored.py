# attnprep: sdpa
# expect: wrong_output
# diagnosis: softmax_unstable + scale_argument_ignored
"""Array-API style: every op goes through `xp = array_namespace(x)` (a tiny shim that maps the
standard's names, max / exp / sum with axis= and keepdims=, matmul, permute_dims, where, onto torch),
so the same code would run on numpy or cupy arrays."""
import math
from types import SimpleNamespace

import torch


def array_namespace(*arrays):
    return SimpleNamespace(
        max=lambda a, axis, keepdims=False: torch.amax(a, dim=axis, keepdim=keepdims),
        exp=torch.exp,
        sum=lambda a, axis, keepdims=False: torch.sum(a, dim=axis, keepdim=keepdims),
        matmul=torch.matmul,
        permute_dims=lambda a, axes: a.permute(*axes),
        where=torch.where,
        ones=lambda shape, dtype, device: torch.ones(shape, dtype=dtype, device=device),
        tril=torch.tril,
        bool=torch.bool,
        inf=math.inf,
    )


def softmax(x, dim=-1):
    xp = array_namespace(x)
    e = xp.exp(x)
    return e / xp.sum(e, axis=dim, keepdims=True)


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    xp = array_namespace(query, key, value)
    L, S, E = query.shape[-2], key.shape[-2], query.shape[-1]
    scale_factor = 1.0 / math.sqrt(E)
    axes = tuple(range(key.ndim - 2)) + (key.ndim - 1, key.ndim - 2)
    scores = xp.matmul(query, xp.permute_dims(key, axes)) * scale_factor
    if is_causal:
        allowed = xp.tril(xp.ones((L, S), dtype=xp.bool, device=query.device))
        scores = xp.where(allowed, scores, -xp.inf)
    if attn_mask is not None:
        if attn_mask.dtype == xp.bool:
            scores = xp.where(attn_mask, scores, -xp.inf)
        else:
            scores = scores + attn_mask
    return xp.matmul(softmax(scores, dim=-1), value)
# bug-line: 30, 37
