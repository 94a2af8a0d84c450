# attnprep: norms
# expect: wrong_output
# diagnosis: norm_no_upcast
"""A feature-flag service (Flags.is_enabled(name) over a table of rollouts, default off for names
not listed): the float32 upcast of the statistics was a flag, and its rollout was set to False."""
import torch
import torch.nn as nn


class Flags:
    ROLLOUT = {
        "norm.upcast_statistics": False,
        "norm.fused_kernel": False,
    }

    @classmethod
    def is_enabled(cls, name):
        return cls.ROLLOUT.get(name, False)


def stats_dtype(x):
    return torch.promote_types(x.dtype, torch.float32) if Flags.is_enabled("norm.upcast_statistics") else x.dtype


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.to(stats_dtype(x))
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(x.dtype)


class LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        h = x.to(stats_dtype(x))
        mu = h.mean(-1, keepdim=True)
        var = (h - mu).pow(2).mean(-1, keepdim=True)
        return self.weight * ((h - mu) * torch.rsqrt(var + self.eps)).to(x.dtype) + self.bias
# bug-line: 12
