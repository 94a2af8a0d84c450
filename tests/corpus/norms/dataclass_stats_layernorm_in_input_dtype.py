# attnprep: norms
# expect: wrong_output
# diagnosis: norm_no_upcast
"""A frozen dataclass `Stats(mean, var)` returned by a `moments(x, upcast: bool)` helper shared by
both modules, typed with typing.Literal for the kind. RMSNorm asks for upcast=True; LayerNorm was
written later and calls moments(x, upcast=False): its mean and variance are taken in the input's
dtype, which only shows in float16 / bfloat16 cases."""

from dataclasses import dataclass
from typing import Literal

import torch
import torch.nn as nn


@dataclass(frozen=True)
class Stats:
    mean: torch.Tensor
    var: torch.Tensor


def moments(x: torch.Tensor, upcast: bool, kind: Literal["central", "raw"]) -> Stats:
    h = x.float() if upcast else x
    mean = h.mean(-1, keepdim=True)
    if kind == "raw":
        return Stats(mean, h.pow(2).mean(-1, keepdim=True))
    return Stats(mean, (h - mean).pow(2).mean(-1, keepdim=True))


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        st = moments(x, upcast=True, kind="raw")
        return (x.float() * torch.rsqrt(st.var + self.eps)).to(x.dtype) * self.weight


class LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        st = moments(x, upcast=False, kind="central")
        y = (x - st.mean) / torch.sqrt(st.var + self.eps)
        return y.to(x.dtype) * self.weight + self.bias
# bug-line: 49
