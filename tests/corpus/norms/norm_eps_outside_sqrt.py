# attnprep: norms
# expect: wrong_output
# diagnosis: norm_eps_outside_sqrt
"""RMSNorm adds eps to the root mean square instead of to the mean square."""

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float()
        rms = h.pow(2).mean(-1, keepdim=True).sqrt()
        return self.weight * (h / (rms + self.eps)).to(x.dtype)


class LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        h = x.float()
        mean = h.mean(-1, keepdim=True)
        var = (h - mean).pow(2).mean(-1, keepdim=True)
        h = (h - mean) / torch.sqrt(var + self.eps)
        return self.weight * h.to(x.dtype) + self.bias
# bug-line: 19
