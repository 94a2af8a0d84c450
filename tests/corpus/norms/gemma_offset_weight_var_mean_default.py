# attnprep: norms
# expect: wrong_output
# diagnosis: rmsnorm_one_plus_weight + norm_unbiased_variance
"""A C-header-like file: upper-case module constants for the defaults, a tiny `_stats` helper per
norm, Gemma's habit of scaling by (1 + weight) carried into RMSNorm, LayerNorm's statistics from
torch.var_mean."""
import torch
import torch.nn as nn

RMS_EPS_DEFAULT = 1e-6
LN_EPS_DEFAULT = 1e-5
STAT_DTYPE = torch.float32


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=RMS_EPS_DEFAULT):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def _stats(self, h):
        return h.pow(2).mean(-1, keepdim=True)

    def forward(self, x):
        h = x.to(STAT_DTYPE)
        h = h * torch.rsqrt(self._stats(h) + self.eps)
        return (h * (1.0 + self.weight.float())).to(x.dtype)


class LayerNorm(nn.Module):
    def __init__(self, dim, eps=LN_EPS_DEFAULT):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def _stats(self, h):
        var, mean = torch.var_mean(h, dim=-1, keepdim=True)
        return mean, var

    def forward(self, x):
        h = x.to(STAT_DTYPE)
        mean, var = self._stats(h)
        h = (h - mean) * torch.rsqrt(var + self.eps)
        return self.weight * h.to(x.dtype) + self.bias
# bug-line: 27, 38
