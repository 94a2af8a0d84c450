# attnprep: norms
# expect: wrong_output
# diagnosis: norm_no_upcast + norm_unbiased_variance
"""Gemma-ish norms, two objects with two mistakes: RMSNorm computes its statistics in the input dtype (no float32 upcast) AND LayerNorm uses the unbiased variance (var with correction 1)."""

import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class LayerNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        h = x.float()
        mean = h.mean(-1, keepdim=True)
        var = h.var(-1, keepdim=True)  # 无偏方差
        return ((h - mean) / torch.sqrt(var + self.eps)).to(x.dtype) * self.weight + self.bias
