# attnprep: norms
# expect: wrong_output
# diagnosis: norm_eps_outside_sqrt + norm_unbiased_variance
"""Two objects, a slip in each: LayerNorm takes torch.var's default (unbiased, / (dim - 1)), and RMSNorm
adds eps outside the square root; both upcast correctly."""

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.to(torch.float32)
        rms = h.pow(2).mean(dim=-1, keepdim=True).sqrt() + self.eps
        return self.weight * (h / rms).to(x.dtype)


class LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        h = x.to(torch.float32)
        mean = h.mean(dim=-1, keepdim=True)
        var = h.var(dim=-1, keepdim=True)
        y = (h - mean) / torch.sqrt(var + self.eps)
        return self.weight * y.to(x.dtype) + self.bias
# bug-line: 19, 33
