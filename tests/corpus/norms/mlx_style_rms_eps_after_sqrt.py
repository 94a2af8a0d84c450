# attnprep: norms
# expect: wrong_output
# diagnosis: norm_eps_outside_sqrt
"""Norms written MLX-style: functional cores (rms_norm, layer_norm) with the modules as thin holders of weight / bias."""
import torch
import torch.nn as nn


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    xf = x.to(torch.float32) if x.dtype in (torch.float16, torch.bfloat16) else x
    rms = xf.square().mean(axis=-1, keepdims=True).sqrt()
    y = xf / (rms + eps)
    return weight * y.to(x.dtype)


def layer_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float) -> torch.Tensor:
    xf = x.to(torch.float32) if x.dtype in (torch.float16, torch.bfloat16) else x
    mu = xf.mean(axis=-1, keepdims=True)
    var = xf.var(axis=-1, keepdims=True, unbiased=False)
    y = (xf - mu) * torch.rsqrt(var + eps)
    return weight * y.to(x.dtype) + bias


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones((dim,)))
        self.eps = eps

    def forward(self, x):
        return rms_norm(x, self.weight, self.eps)


class LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones((dim,)))
        self.bias = nn.Parameter(torch.zeros((dim,)))
        self.eps = eps

    def forward(self, x):
        return layer_norm(x, self.weight, self.bias, self.eps)
# bug-line: 12
