# attnprep: norms
# expect: passed
"""RMSNorm through torch.linalg.vector_norm: ||x||² / d is the mean square (eps still inside the
root); LayerNorm on the centred x the same way. A shared functional helper."""

import math

import torch
import torch.nn as nn


def _rms_inv(h: torch.Tensor, eps: float) -> torch.Tensor:
    d = h.shape[-1]
    return torch.rsqrt(torch.linalg.vector_norm(h, ord=2, dim=-1, keepdim=True).pow(2) / d + eps)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        h = x.float()
        return (h * _rms_inv(h, self.eps)).to(x.dtype) * self.weight


class LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))
        self.eps = eps

    def forward(self, x):
        h = x.float()
        h = h - h.mean(-1, keepdim=True)
        return (h * _rms_inv(h, self.eps)).to(x.dtype) * self.weight + self.bias
