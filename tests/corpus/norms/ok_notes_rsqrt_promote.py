# attnprep: norms
# expect: passed
"""面经 style, both norms through one helper that upcasts with promote_types and casts back before the
gain: correct."""

import torch
import torch.nn as nn


def _stats_dtype(x):
    return torch.promote_types(x.dtype, torch.float32)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.to(_stats_dtype(x))
        h = h * (h * h).mean(-1, keepdim=True).add(self.eps).rsqrt()
        return h.to(x.dtype) * self.weight


class LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight, self.bias = nn.Parameter(torch.ones(dim)), nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        h = x.to(_stats_dtype(x))
        c = h - h.mean(-1, keepdim=True)
        h = c * c.pow(2).mean(-1, keepdim=True).add(self.eps).rsqrt()
        return h.to(x.dtype) * self.weight + self.bias
