# attnprep: norms
# expect: wrong_output
# diagnosis: norm_wrong_dim
"""BatchNorm memory: the statistics over dim 0 (the batch), not over each token's features."""

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float()
        return self.weight * (h * torch.rsqrt(h.pow(2).mean(0, keepdim=True) + self.eps)).to(x.dtype)


class LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        h = x.float()
        mu = h.mean(0, keepdim=True)
        var = h.var(0, keepdim=True, unbiased=False)
        return self.weight * ((h - mu) / torch.sqrt(var + self.eps)).to(x.dtype) + self.bias
