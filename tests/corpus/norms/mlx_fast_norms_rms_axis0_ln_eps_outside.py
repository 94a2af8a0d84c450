# attnprep: norms
# expect: wrong_output
# diagnosis: norm_wrong_dim + norm_eps_outside_sqrt
"""MLX's mx.fast.rms_norm(x, weight, eps) and mx.fast.layer_norm(x, weight, bias, eps) ported as
free functions with mlx's `axis=` / `keepdims=` habits (through a small `mean` wrapper), the modules
thin wrappers as mlx.nn's. Two slips, one in each: the RMS statistic is taken with axis=0 (over
the leading dim instead of the features), and the LayerNorm adds eps after the square root."""

import torch
import torch.nn as nn


def mean(x, axis, keepdims=False):
    return torch.mean(x, dim=axis, keepdim=keepdims)


def fast_rms_norm(x, weight, eps):
    xf = x.astype(torch.float32) if hasattr(x, "astype") else x.to(torch.float32)
    ms = mean(xf * xf, axis=0, keepdims=True)
    return weight * (xf * torch.rsqrt(ms + eps)).to(x.dtype)


def fast_layer_norm(x, weight, bias, eps):
    xf = x.to(torch.float32)
    mu = mean(xf, axis=-1, keepdims=True)
    var = mean(torch.square(xf - mu), axis=-1, keepdims=True)
    y = (xf - mu) / (torch.sqrt(var) + eps)
    return weight * y.to(x.dtype) + bias


class RMSNorm(nn.Module):
    def __init__(self, dims, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dims))
        self.eps = eps

    def forward(self, x):
        return fast_rms_norm(x, self.weight, self.eps)


class LayerNorm(nn.Module):
    def __init__(self, dims, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dims))
        self.bias = nn.Parameter(torch.zeros(dims))
        self.eps = eps

    def forward(self, x):
        return fast_layer_norm(x, self.weight, self.bias, self.eps)
# bug-line: 19, 27
