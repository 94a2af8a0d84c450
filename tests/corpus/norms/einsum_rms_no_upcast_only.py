# attnprep: norms
# expect: wrong_output
# diagnosis: norm_no_upcast
"""RMSNorm's mean of squares by einsum in the input's dtype (right in float32, wrong only in half
precision); LayerNorm is right."""

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ms = torch.einsum("...i,...i->...", x, x)[..., None] / x.size(-1)
        return x * torch.rsqrt(ms + self.eps) * self.weight


class LayerNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.float()
        mu = h.mean(-1, keepdim=True)
        var = h.var(-1, keepdim=True, correction=0)
        y = (h - mu) * (var + self.eps).rsqrt()
        return y.to(x.dtype) * self.weight + self.bias
