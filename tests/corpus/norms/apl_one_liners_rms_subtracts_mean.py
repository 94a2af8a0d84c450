# attnprep: norms
# expect: wrong_output
# diagnosis: rmsnorm_subtracts_mean
"""An APL programmer's one-liners: each norm a single expression built from tiny named primitives
(`rho` for the last size, `avg` for a mean over the last axis, `sq`, `rsqrt`), with the APL glyph in a
comment beside each; RMSNorm's statistic written through the same centred helper as LayerNorm's."""
import torch
import torch.nn as nn


def avg(x):  # +/÷≢
    return x.mean(dim=-1, keepdim=True)


def centred(x):  # x - +/÷≢ x
    return x - avg(x)


def sq(x):  # ×⍨
    return x * x


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        f = x.float()
        return (f * torch.rsqrt(avg(sq(centred(f))) + self.eps)).to(x.dtype) * self.weight


class LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        f = x.float()
        return (centred(f) * torch.rsqrt(avg(sq(centred(f))) + self.eps)).to(x.dtype) * self.weight + self.bias
# bug-line: 31
