# attnprep: sdpa
# expect: mask_leak
# diagnosis: float_mask_multiplied
"""Ops registered by name in a module-level dict by a decorator (`@register("softmax")`), the
attention looking its steps up by key (OPS["matmul"], OPS["mask"]); the mask handler dispatches on
the mask's dtype through a second small table."""
import math

import torch

OPS = {}
MASKERS = {}


def register(name, table=OPS):
    def deco(fn):
        table[name] = fn
        return fn
    return deco


@register("softmax")
def softmax(x, dim=-1):
    shifted = x - x.amax(dim=dim, keepdim=True)
    e = shifted.exp()
    return e / e.sum(dim=dim, keepdim=True)


@register("matmul")
def _matmul(a, b):
    return a @ b


@register("bool", MASKERS)
def _bool_mask(scores, mask):
    return scores.masked_fill(~mask, float("-inf"))


@register("float", MASKERS)
def _float_mask(scores, mask):
    return scores * mask


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    L, S = query.shape[-2], key.shape[-2]
    s = OPS["matmul"](query, key.transpose(-2, -1)) * (scale if scale is not None else 1 / math.sqrt(query.shape[-1]))
    if is_causal:
        s = MASKERS["bool"](s, torch.ones(L, S, dtype=torch.bool, device=query.device).tril())
    if attn_mask is not None:
        kind = "bool" if attn_mask.dtype == torch.bool else "float"
        s = MASKERS[kind](s, attn_mask)
    return OPS["matmul"](OPS["softmax"](s, dim=-1), value)
# bug-line: 41
