# attnprep: norms
# expect: passed
"""Correct: a mixin computes the float32 statistics; both norms inherit it; super().__init__() with no
arguments in a cooperative chain; LayerNorm via torch.addcmul."""
import torch
import torch.nn as nn


class Float32StatsMixin:
    @staticmethod
    def stats(x: torch.Tensor, center: bool):
        h = x.to(torch.float32) if x.dtype in (torch.float16, torch.bfloat16) else x
        mean = h.mean(-1, keepdim=True) if center else None
        c = h - mean if center else h
        return h, mean, c.pow(2).mean(-1, keepdim=True)


class RMSNorm(Float32StatsMixin, nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h, _, ms = self.stats(x, center=False)
        return (h * torch.rsqrt(ms + self.eps)).to(x.dtype) * self.weight


class LayerNorm(Float32StatsMixin, nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        h, mean, var = self.stats(x, center=True)
        y = ((h - mean) * torch.rsqrt(var + self.eps)).to(x.dtype)
        return torch.addcmul(self.bias, y, self.weight)
