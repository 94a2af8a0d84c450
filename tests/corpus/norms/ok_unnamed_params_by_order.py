# attnprep: norms
# expect: passed
"""Parameters with names that say nothing (p, q): the grader works out which one is the weight
by trying both and comparing with the reference."""

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.p = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        h = x.float()
        h = h / h.square().mean(dim=-1, keepdim=True).add(self.eps).sqrt()
        return h.to(x.dtype) * self.p


class LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.q = nn.Parameter(torch.zeros(dim))  # the shift, declared first
        self.p = nn.Parameter(torch.ones(dim))  # the scale
        self.eps = eps

    def forward(self, x):
        h = x.float()
        h = h - h.mean(dim=-1, keepdim=True)
        h = h * (h.square().mean(dim=-1, keepdim=True) + self.eps).rsqrt()
        return h.to(x.dtype) * self.p + self.q
