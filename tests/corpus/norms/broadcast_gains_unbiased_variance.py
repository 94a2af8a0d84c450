# attnprep: norms
# expect: wrong_output
# diagnosis: norm_unbiased_variance
"""Gains kept broadcast-ready as (1, 1, dim) parameters; LayerNorm's variance by torch.var, whose
default is the unbiased (N - 1) estimate."""

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(1, 1, dim))

    def forward(self, x):
        h = x.float()
        y = (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)
        return y * self.weight.view(*([1] * (x.dim() - 1)), -1)


class LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(1, 1, dim))
        self.bias = nn.Parameter(torch.zeros(1, 1, dim))

    def forward(self, x):
        h = x.float()
        mu = h.mean(-1, keepdim=True)
        var = h.var(-1, keepdim=True)
        y = ((h - mu) * torch.rsqrt(var + self.eps)).to(x.dtype)
        shape = (*([1] * (x.dim() - 1)), -1)
        return y * self.weight.view(shape) + self.bias.view(shape)
