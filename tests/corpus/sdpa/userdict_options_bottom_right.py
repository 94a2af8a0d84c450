# attnprep: sdpa
# expect: mask_leak
# diagnosis: causal_bottom_right
"""collections.UserDict options with validated keys: SDPAOptions holds the mask settings, the causal
alignment among them; its default was "bottom_right" (the KV-cache convention) where torch's SDPA
aligns top-left."""
import math
from collections import UserDict

import torch


class SDPAOptions(UserDict):
    ALLOWED = {"causal_align", "neg"}

    def __init__(self, **kw):
        super().__init__(causal_align="bottom_right", neg=float("-inf"))
        self.update(kw)

    def __setitem__(self, key, value):
        if key not in self.ALLOWED:
            raise KeyError(key)
        super().__setitem__(key, value)


OPTIONS = SDPAOptions()


def softmax(x, dim=-1):
    m = x.max(dim=dim, keepdim=True).values
    e = (x - m).exp()
    return e / e.sum(dim=dim, keepdim=True)


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    L, S = query.shape[-2], key.shape[-2]
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    s = (query @ key.transpose(-2, -1)) * scale
    if is_causal:
        shift = S - L if OPTIONS["causal_align"] == "bottom_right" else 0
        keep = torch.ones(L, S, dtype=torch.bool, device=query.device).tril(diagonal=shift)
        s = s.masked_fill(~keep, OPTIONS["neg"])
    if attn_mask is not None:
        s = s.masked_fill(~attn_mask, OPTIONS["neg"]) if attn_mask.dtype == torch.bool else s + attn_mask
    return softmax(s, dim=-1) @ value
# bug-line: 17
