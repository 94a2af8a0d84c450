# attnprep: norms
# expect: wrong_output
# diagnosis: rmsnorm_subtracts_mean + norm_eps_outside_sqrt
"""MindSpore habits (ops.ReduceMean(keep_dims=True), ops.Sqrt, ops.Cast as tiny wrappers, gamma /
beta names); one slip in each object: the RMSNorm centres x before its mean of squares (a LayerNorm
without bias), and the LayerNorm adds eps after the square root."""

import torch
import torch.nn as nn


def reduce_mean(x, axis=-1):
    return x.mean(dim=axis, keepdim=True)


def cast(x, dtype):
    return x.to(dtype)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.gamma = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = cast(x, torch.float32)
        h = h - reduce_mean(h)
        h = h / torch.sqrt(reduce_mean(h * h) + self.eps)
        return self.gamma * cast(h, x.dtype)


class LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.gamma = nn.Parameter(torch.ones(dim))
        self.beta = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        h = cast(x, torch.float32)
        mean = reduce_mean(h)
        variance = reduce_mean((h - mean) ** 2)
        h = (h - mean) / (torch.sqrt(variance) + self.eps)
        return self.gamma * cast(h, x.dtype) + self.beta
# bug-line: 28, 44
