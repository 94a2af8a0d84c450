# attnprep: norms
# expect: wrong_output
# diagnosis: layernorm_no_mean
"""LayerNorm subtracts the mean from x but takes the variance as the mean of x² (not of the centred x)."""

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float()
        return self.weight * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)


class LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        h = x.float()
        var = h.pow(2).mean(-1, keepdim=True)
        y = (h - h.mean(-1, keepdim=True)) * torch.rsqrt(var + self.eps)
        return self.weight * y.to(x.dtype) + self.bias
# bug-line: 30
