# attnprep: attention_backward
# expect: passed
"""Correct: an Attention class with static forward/backward methods (autograd.Function shape, no autograd used),
a dataclass for the saved tensors, type hints."""
import math
from dataclasses import dataclass
from typing import Tuple

import torch
from torch import Tensor


@dataclass
class Saved:
    q: Tensor
    k: Tensor
    v: Tensor
    p: Tensor
    scale: float


class HandAttention:
    @staticmethod
    def forward(q: Tensor, k: Tensor, v: Tensor, causal: bool) -> Tuple[Tensor, Saved]:
        scale = 1.0 / math.sqrt(q.size(-1))
        s = torch.matmul(q, k.transpose(-2, -1)) * scale
        if causal:
            L, S = s.shape[-2:]
            s = torch.where(torch.ones(L, S, dtype=torch.bool, device=s.device).tril(), s, torch.full_like(s, -torch.inf))
        p = torch.exp(s - s.max(-1, keepdim=True).values)
        p = p / p.sum(-1, keepdim=True)
        return p @ v, Saved(q, k, v, p, scale)

    @staticmethod
    def backward(ctx: Saved, dout: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
        dv = ctx.p.transpose(-2, -1) @ dout
        dp = dout @ ctx.v.transpose(-2, -1)
        ds = ctx.p * (dp - (dp * ctx.p).sum(-1, keepdim=True))
        return (ds @ ctx.k) * ctx.scale, (ds.transpose(-2, -1) @ ctx.q) * ctx.scale, dv


def attention_backward(q, k, v, dout, is_causal=False):
    _, saved = HandAttention.forward(q, k, v, is_causal)
    return HandAttention.backward(saved, dout)
