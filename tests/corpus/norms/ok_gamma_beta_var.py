# attnprep: norms
# expect: passed
"""Own names (gamma, beta), torch.var with unbiased=False, sqrt and division."""

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.gamma = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        xf = x.float()
        rms = torch.sqrt(torch.mean(xf * xf, dim=-1, keepdim=True) + self.eps)
        return (xf / rms).to(x.dtype) * self.gamma


class LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.gamma = nn.Parameter(torch.ones(dim))
        self.beta = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        xf = x.float()
        mu = xf.mean(dim=-1, keepdim=True)
        var = xf.var(dim=-1, keepdim=True, unbiased=False)
        y = (xf - mu) / torch.sqrt(var + self.eps)
        return y.to(x.dtype) * self.gamma + self.beta
