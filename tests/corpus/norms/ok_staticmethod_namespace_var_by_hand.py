# attnprep: norms
# expect: passed
"""Correct: the statistics in a class of staticmethods (Stats.upcast, Stats.mean_sq, Stats.mean_var:
sums divided by the width, the biased variance as the mean of squared deviations), the modules calling
them, a division by sqrt rather than rsqrt; float64 inputs kept in float64 through torch.promote_types."""

import torch
import torch.nn as nn


class Stats:
    @staticmethod
    def upcast(x):
        return x.to(torch.promote_types(x.dtype, torch.float32))

    @staticmethod
    def mean_sq(h):
        return (h * h).sum(-1, keepdim=True) / h.shape[-1]

    @staticmethod
    def mean_var(h):
        mu = h.sum(-1, keepdim=True) / h.shape[-1]
        return mu, ((h - mu) ** 2).sum(-1, keepdim=True) / h.shape[-1]


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = Stats.upcast(x)
        return self.weight * (h / (Stats.mean_sq(h) + self.eps).sqrt()).to(x.dtype)


class LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        h = Stats.upcast(x)
        mu, var = Stats.mean_var(h)
        return self.weight * ((h - mu) / (var + self.eps).sqrt()).to(x.dtype) + self.bias
