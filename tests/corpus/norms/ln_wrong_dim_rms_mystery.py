# attnprep: norms
# expect: wrong_output
# diagnosis: norm_wrong_dim
"""LayerNorm normalises over dim 1 (right only for 2-D inputs) AND RMSNorm multiplies by a stray 0.5 that no catalogued mistake makes: only the LayerNorm's mistake may be named."""

import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps) * 0.5
        return h.type_as(x) * self.weight


class LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        h = x.float()
        mu = h.mean(1, keepdim=True)
        var = (h - mu).pow(2).mean(1, keepdim=True)
        return ((h - mu) / torch.sqrt(var + self.eps)).type_as(x) * self.weight + self.bias
# bug-line: 18, 31, 32
