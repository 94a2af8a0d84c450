# attnprep: sdpa
# expect: passed
"""Correct: abc.ABC bias classes chosen by `match` on (attn_mask dtype, is_causal), the softmax
by hand with the row max, `scale` honoured when given, is_causal as torch's top-left tril."""

import abc
import math

import torch


def softmax(x, dim=-1):
    z = x - x.amax(dim=dim, keepdim=True)
    e = z.exp()
    return e / e.sum(dim=dim, keepdim=True)


class Bias(abc.ABC):
    @abc.abstractmethod
    def __call__(self, scores): ...


class Identity(Bias):
    def __call__(self, scores):
        return scores


class Keep(Bias):
    def __init__(self, keep):
        self.keep = keep

    def __call__(self, scores):
        return scores.masked_fill(~self.keep, float("-inf"))


class Add(Bias):
    def __init__(self, bias):
        self.bias = bias

    def __call__(self, scores):
        return scores + self.bias


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    L, S = query.shape[-2], key.shape[-2]
    match (attn_mask, is_causal):
        case (_, True):
            bias = Keep(torch.ones(L, S, dtype=torch.bool, device=query.device).tril())
        case (None, False):
            bias = Identity()
        case (m, False) if m.dtype == torch.bool:
            bias = Keep(m)
        case (m, False):
            bias = Add(m)
    factor = scale if scale is not None else 1 / math.sqrt(query.shape[-1])
    return softmax(bias(query @ key.transpose(-2, -1) * factor), dim=-1) @ value
