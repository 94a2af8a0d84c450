# attnprep: norms
# expect: wrong_output
# diagnosis: rmsnorm_one_plus_weight + layernorm_bias_not_applied
"""Gemma habits in both objects: the RMSNorm scales by (1 + weight) (Gemma stores weight - 1), and the
LayerNorm keeps a bias parameter it never adds."""

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.zeros(dim))

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        output = self._norm(x.float())
        output = output * (1.0 + self.weight.float())
        return output.type_as(x)


class LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        xf = x.float()
        mean = xf.mean(dim=-1, keepdim=True)
        var = xf.var(dim=-1, keepdim=True, unbiased=False)
        y = (xf - mean) / torch.sqrt(var + self.eps)
        return (y * self.weight.float()).to(x.dtype)
# bug-line: 22, 38
