# attnprep: norms
# expect: passed
"""Correct: each module keeps its steps as lambdas set in __init__ that read `self` when called
(`self.stats`, `self.affine`), the way a JAX user writes closures over a params object; the
statistics in float32, the affine part in x's dtype after the cast back."""

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.stats = lambda h: torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        self.affine = lambda y: y * self.weight

    def forward(self, x):
        h = x.float()
        return self.affine((h * self.stats(h)).to(x.dtype))


class LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))
        self.steps = {
            "centre": lambda h: h - h.mean(-1, keepdim=True),
            "scale": lambda c: c * torch.rsqrt(c.pow(2).mean(-1, keepdim=True) + self.eps),
            "affine": lambda y: y * self.weight + self.bias,
        }

    def forward(self, x):
        c = self.steps["centre"](x.float())
        return self.steps["affine"](self.steps["scale"](c).to(x.dtype))
