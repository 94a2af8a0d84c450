# attnprep: norms
# expect: wrong_output
# diagnosis: norm_eps_outside_sqrt + norm_unbiased_variance
"""Racket habits: small pure helpers named like define'd procedures (square, mean-of ->
mean_of, sub1), let*-style sequential bindings as one-assignment lines, cond as if/elif; RMSNorm
added eps after the square root, and LayerNorm's variance divided by n - 1."""
import torch
import torch.nn as nn


def square(t):
    return t * t


def mean_of(t):
    return t.mean(dim=-1, keepdim=True)


def sub1(n):
    return n - 1


def variance_of(t):
    n = t.shape[-1]
    centred = t - mean_of(t)
    return square(centred).sum(dim=-1, keepdim=True) / sub1(n)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float()
        rms = torch.sqrt(mean_of(square(h)))
        y = h / (rms + self.eps)
        return self.weight * y.to(x.dtype)


class LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        h = x.float()
        mu = mean_of(h)
        var = variance_of(h)
        y = (h - mu) / torch.sqrt(var + self.eps)
        return self.weight * y.to(x.dtype) + self.bias
# bug-line: 26, 38
