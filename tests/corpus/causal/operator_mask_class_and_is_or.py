# attnprep: causal
# expect: mask_leak
# diagnosis: masks_combined_or
"""An operator-overloaded Mask wrapper (True = may attend): `a & b` intersects, `~a` blocks, and
mask.apply(scores) fills what it blocks; causal_mask returns the plain bool tensor."""
import math

import torch


class Mask:
    __slots__ = ("keep",)

    def __init__(self, keep: torch.Tensor):
        self.keep = keep.bool()

    def __and__(self, other: "Mask") -> "Mask":
        return Mask(self.keep | other.keep)

    def __invert__(self) -> torch.Tensor:
        return ~self.keep

    def apply(self, scores: torch.Tensor) -> torch.Tensor:
        return scores.masked_fill(~self, float("-inf"))


def causal_mask(seq_len, device=None):
    i = torch.arange(seq_len, device=device)
    return i[:, None] >= i[None, :]


def causal_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    mask = Mask(causal_mask(T, device=q.device))
    if attention_mask is not None:
        mask = mask & Mask(attention_mask[:, None, None, :])
    scores = mask.apply(q @ k.transpose(-2, -1) / math.sqrt(D))
    return scores.softmax(-1) @ v
# bug-line: 18
