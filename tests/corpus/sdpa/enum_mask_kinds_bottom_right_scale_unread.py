# attnprep: sdpa
# expect: mask_leak
# diagnosis: causal_bottom_right + scale_argument_ignored
"""An enum.Enum of mask kinds (NONE / BOOL / ADDITIVE / CAUSAL) picked by a `classify()` helper,
an abc.ABC `Bias` with one subclass per kind whose `apply(scores)` does the work. Two slips: the
causal bias is aligned bottom-right (FlashAttention >= 2.1's convention: tril(diagonal=S - L)),
and the scale argument is never read (always 1/sqrt(E))."""

import abc
import enum
import math

import torch


class MaskKind(enum.Enum):
    NONE = 0
    BOOL = 1
    ADDITIVE = 2
    CAUSAL = 3


def classify(attn_mask, is_causal):
    if is_causal:
        return MaskKind.CAUSAL
    if attn_mask is None:
        return MaskKind.NONE
    return MaskKind.BOOL if attn_mask.dtype == torch.bool else MaskKind.ADDITIVE


class Bias(abc.ABC):
    @abc.abstractmethod
    def apply(self, scores): ...


class NoBias(Bias):
    def apply(self, scores):
        return scores


class BoolBias(Bias):
    def __init__(self, mask):
        self.mask = mask

    def apply(self, scores):
        return scores.masked_fill(~self.mask, float("-inf"))


class AdditiveBias(Bias):
    def __init__(self, mask):
        self.mask = mask

    def apply(self, scores):
        return scores + self.mask


class CausalBias(Bias):
    def apply(self, scores):
        L, S = scores.shape[-2:]
        keep = torch.ones(L, S, dtype=torch.bool, device=scores.device).tril(diagonal=S - L)
        return scores.masked_fill(~keep, float("-inf"))


def softmax(x, dim=-1):
    e = torch.exp(x - x.amax(dim=dim, keepdim=True))
    return e / e.sum(dim=dim, keepdim=True)


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    kind = classify(attn_mask, is_causal)
    bias = {MaskKind.NONE: NoBias, MaskKind.CAUSAL: CausalBias}.get(kind)
    bias = bias() if bias else (BoolBias if kind is MaskKind.BOOL else AdditiveBias)(attn_mask)
    factor = 1.0 / math.sqrt(query.shape[-1])
    return softmax(bias.apply(query @ key.transpose(-2, -1) * factor), dim=-1) @ value
# bug-line: 60, 73
