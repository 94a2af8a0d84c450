# attnprep: norms
# expect: wrong_output
# diagnosis: layernorm_no_mean
"""LayerNorm computes the right variance but divides x itself, not x - mean."""

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(x.dtype)


class LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        h = x.float()
        var = h.var(-1, keepdim=True, unbiased=False)
        h = h / torch.sqrt(var + self.eps)
        return self.weight * h.to(x.dtype) + self.bias
