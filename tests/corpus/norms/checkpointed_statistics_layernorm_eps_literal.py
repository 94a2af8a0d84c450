# attnprep: norms
# expect: wrong_output
# diagnosis: norm_eps_ignored
"""Activation-checkpointing habits: each norm's float32 statistics recomputed in the backward
(torch.utils.checkpoint.checkpoint with use_reentrant=False) through a static _normalise helper that
takes eps as an argument; the LayerNorm's call passes the 1e-5 literal, not its own eps."""
import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    @staticmethod
    def _normalise(x, eps):
        h = x.float()
        return (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)

    def forward(self, x):
        return self.weight * checkpoint(self._normalise, x, self.eps, use_reentrant=False)


class LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    @staticmethod
    def _normalise(x, eps):
        h = x.float()
        mu = h.mean(-1, keepdim=True)
        var = (h - mu).pow(2).mean(-1, keepdim=True)
        return ((h - mu) * torch.rsqrt(var + eps)).to(x.dtype)

    def forward(self, x):
        y = checkpoint(self._normalise, x, 1e-5, use_reentrant=False)
        return self.weight * y + self.bias
# bug-line: 42
