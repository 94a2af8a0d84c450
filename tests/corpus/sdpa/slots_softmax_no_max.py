# attnprep: sdpa
# expect: wrong_output
# diagnosis: softmax_unstable
"""softmax in a __slots__ class with __call__; the row max is not subtracted (overflow at 1e4)."""
import functools
import math

import torch


class _Softmax:
    __slots__ = ("dim",)

    def __init__(self, dim):
        self.dim = dim

    def __call__(self, x):
        shifted = x
        e = shifted.exp()
        return e.div(e.sum(dim=self.dim, keepdim=True))


def softmax(x, dim=-1):
    return _Softmax(dim)(x)


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    scale = 1 / math.sqrt(query.size(-1)) if scale is None else scale
    scores = query @ key.mT * scale
    fill = functools.partial(torch.Tensor.masked_fill, value=float("-inf"))
    if is_causal:
        L, S = scores.shape[-2], scores.shape[-1]
        scores = fill(scores, torch.ones(L, S, device=scores.device).tril() == 0)
    if attn_mask is not None:
        scores = fill(scores, attn_mask.logical_not()) if attn_mask.dtype == torch.bool else scores + attn_mask
    return softmax(scores, dim=-1) @ value
# bug-line: 18
