# attnprep: norms
# expect: passed
"""ქართული კომენტარები (Georgian comments), the mean square as h.mul(h).mean, the LayerNorm's
statistics from torch.var_mean with correction=0; float32 statistics, cast back before the weight."""

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float()  # სტატისტიკა float32-ში
        rms2 = h.mul(h).mean(dim=-1, keepdim=True)  # mean(x²)
        h = h / torch.sqrt(rms2 + self.eps)
        return self.weight * h.to(x.dtype)


class LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        h = x.float()
        var, mean = torch.var_mean(h, dim=-1, keepdim=True, correction=0)  # მიკერძოებული დისპერსია
        h = (h - mean) / torch.sqrt(var + self.eps)
        return self.weight * h.to(x.dtype) + self.bias
