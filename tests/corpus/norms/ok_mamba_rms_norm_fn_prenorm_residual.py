# attnprep: norms
# expect: passed
"""Correct: mamba_ssm-style free functions `rms_norm_fn(x, weight, bias, residual=None, prenorm=False,
eps=1e-6)` and `layer_norm_fn(...)` with the residual / prenorm arguments kept (unused by the
modules), statistics in float32 by `x.float()`, `torch.var(unbiased=False)` for LayerNorm, the
result cast back to x's dtype before the affine part."""

import torch
import torch.nn as nn


def rms_norm_fn(x, weight, bias=None, residual=None, prenorm=False, eps=1e-6):
    if residual is not None:
        x = x + residual
    xf = x.float()
    y = (xf / torch.sqrt(torch.mean(xf * xf, dim=-1, keepdim=True) + eps)).to(x.dtype) * weight
    y = y if bias is None else y + bias
    return (y, x) if prenorm else y


def layer_norm_fn(x, weight, bias=None, residual=None, prenorm=False, eps=1e-5):
    if residual is not None:
        x = x + residual
    xf = x.float()
    var, mean = torch.var_mean(xf, dim=-1, keepdim=True, unbiased=False)
    y = ((xf - mean) / torch.sqrt(var + eps)).to(x.dtype) * weight
    y = y if bias is None else y + bias
    return (y, x) if prenorm else y


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x, residual=None, prenorm=False):
        return rms_norm_fn(x, self.weight, residual=residual, prenorm=prenorm, eps=self.eps)


class LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x, residual=None, prenorm=False):
        return layer_norm_fn(x, self.weight, self.bias, residual=residual, prenorm=prenorm, eps=self.eps)
