# attnprep: norms
# expect: wrong_output
# diagnosis: norm_eps_outside_sqrt
"""Statistics from library reductions: the RMS as torch.linalg.vector_norm(x, dim=-1) / sqrt(dim),
LayerNorm's from torch.std_mean(..., correction=0); both upcast with `.float()` and cast back with
`type_as`, then scaled."""
import math

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.dim, self.eps = dim, eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float()
        rms = torch.linalg.vector_norm(h, ord=2, dim=-1, keepdim=True) / math.sqrt(h.shape[-1])
        return self.weight * (h / (rms + self.eps)).type_as(x)


class LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        h = x.float()
        std, mean = torch.std_mean(h, dim=-1, keepdim=True, correction=0)
        var = std.square()
        return self.weight * ((h - mean) / torch.sqrt(var + self.eps)).type_as(x) + self.bias
# bug-line: 22
