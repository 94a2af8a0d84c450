# attnprep: norms
# expect: passed
"""Correct: any-rank input flattened to rows with x.reshape(-1, dim) (math.prod of the leading
shape for the view back), the mean written as sum / dim, the variance as E[x^2] - E[x]^2 in float64
(so no cancellation error shows), cast back to x's dtype."""

import math

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.dim, self.eps = dim, eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        lead = x.shape[:-1]
        rows = x.reshape(math.prod(lead), self.dim).double()
        ms = (rows * rows).sum(1, keepdim=True) / self.dim
        y = (rows / torch.sqrt(ms + self.eps)).to(x.dtype).view(*lead, self.dim)
        return y * self.weight


class LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.dim, self.eps = dim, eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        lead = x.shape[:-1]
        rows = x.reshape(math.prod(lead), self.dim).double()
        mean = rows.sum(1, keepdim=True) / self.dim
        var = (rows * rows).sum(1, keepdim=True) / self.dim - mean * mean
        y = ((rows - mean) / torch.sqrt(var + self.eps)).to(x.dtype).view(*lead, self.dim)
        return y * self.weight + self.bias
