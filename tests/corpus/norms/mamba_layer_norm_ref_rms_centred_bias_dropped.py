# attnprep: norms
# expect: wrong_output
# diagnosis: rmsnorm_subtracts_mean + layernorm_bias_not_applied
"""mamba_ssm's ops/triton/layer_norm.py reference: one `layer_norm_ref(x, weight, bias, residual=None,
eps=1e-6, prenorm=False, upcast=False, is_rms_norm=False)` serving both modules, with `dtype =
x.dtype`, `if upcast: ... .float()`, `residual` added first. Two slips: the RMS branch centres x
before taking the root mean square, and the LayerNorm module passes bias=None (the bias is never
added)."""

import torch
import torch.nn as nn


def layer_norm_ref(x, weight, bias, residual=None, eps=1e-6, prenorm=False, upcast=True, is_rms_norm=False):
    dtype = x.dtype
    if upcast:
        weight = weight.float()
        bias = bias.float() if bias is not None else None
        x = x.float()
    if residual is not None:
        x = (x + residual).to(x.dtype)
    if is_rms_norm:
        xc = x - x.mean(dim=-1, keepdim=True)
        rstd = 1 / torch.sqrt(xc.square().mean(dim=-1, keepdim=True) + eps)
        out = (xc * rstd).to(dtype) * weight.to(dtype)
    else:
        mean = x.mean(dim=-1, keepdim=True)
        var = (x - mean).square().mean(dim=-1, keepdim=True)
        out = ((x - mean) * torch.rsqrt(var + eps)).to(dtype) * weight.to(dtype)
        if bias is not None:
            out = out + bias.to(dtype)
    return out if not prenorm else (out, x)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return layer_norm_ref(x, self.weight, None, eps=self.eps, is_rms_norm=True)


class LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        return layer_norm_ref(x, self.weight, None, eps=self.eps)
# bug-line: 23, 53
