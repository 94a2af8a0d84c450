# attnprep: norms
# expect: wrong_output
# diagnosis: norm_unbiased_variance
"""Albanian comments and a statistics helper in numpy's spelling (ddof = delta degrees of freedom)
whose default was written 1, the sample variance; LayerNorm calls it without ddof."""
import torch
import torch.nn as nn


def _variance(h, axis=-1, ddof=1):
    # varianca: shuma e katrorëve të devijimeve / (n - ddof)
    n = h.shape[axis]
    mu = h.mean(dim=axis, keepdim=True)
    return (h - mu).pow(2).sum(dim=axis, keepdim=True) / (n - ddof)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        # rrënja e mesatares së katrorëve
        h = x.to(torch.float32)
        h = h / torch.sqrt(h.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return self.weight * h.to(x.dtype)


class LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        h = x.to(torch.float32)
        mu = h.mean(dim=-1, keepdim=True)
        var = _variance(h)
        # normalizimi, pastaj shkallëzimi dhe zhvendosja
        y = ((h - mu) / torch.sqrt(var + self.eps)).to(x.dtype)
        return y * self.weight + self.bias
# bug-line: 10
