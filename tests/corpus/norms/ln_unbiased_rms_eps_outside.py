# attnprep: norms
# expect: wrong_output
# diagnosis: norm_unbiased_variance + norm_eps_outside_sqrt
"""LayerNorm with torch.var's default (unbiased), RMSNorm with eps added after the square root."""
import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float()
        h = h / (h.pow(2).mean(-1, keepdim=True).sqrt() + self.eps)
        return self.weight * h.type_as(x)


class LayerNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        h = x.float()
        mu = h.mean(-1, keepdim=True)
        var = h.var(-1, keepdim=True)
        return self.weight * ((h - mu) / torch.sqrt(var + self.eps)).type_as(x) + self.bias
