# attnprep: norms
# expect: wrong_output
# diagnosis: norm_unbiased_variance
"""NVIDIA TransformerEngine's names: module-level `_rmsnorm_fwd(inp, weight, eps)` and
`_layernorm_fwd(inp, weight, bias, eps)` returning (out, mu, rsigma) as TE's kernels do, a
`zero_centered_gamma` flag kept off, `fwd_ln_sm_margin` carried as an unused attribute, the modules
thin wrappers. The LayerNorm's variance comes from Tensor.var, whose default is the unbiased (N - 1)
estimate."""

import torch
import torch.nn as nn


def _rmsnorm_fwd(inp, weight, eps):
    x = inp.to(torch.float32)
    rsigma = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)
    return (x * rsigma).to(inp.dtype) * weight, rsigma


def _layernorm_fwd(inp, weight, bias, eps):
    x = inp.to(torch.float32)
    mu = x.mean(dim=-1, keepdim=True)
    var = x.var(dim=-1, keepdim=True)
    rsigma = torch.rsqrt(var + eps)
    out = ((x - mu) * rsigma).to(inp.dtype) * weight + bias
    return out, mu, rsigma


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.zero_centered_gamma = False
        self.fwd_rmsnorm_sm_margin = 0
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, inp):
        out, _ = _rmsnorm_fwd(inp, self.weight, self.eps)
        return out


class LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.zero_centered_gamma = False
        self.fwd_ln_sm_margin = 0
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, inp):
        out, _, _ = _layernorm_fwd(inp, self.weight, self.bias, self.eps)
        return out
# bug-line: 23
