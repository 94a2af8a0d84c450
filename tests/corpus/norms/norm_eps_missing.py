# attnprep: norms
# expect: wrong_output
# diagnosis: norm_eps_missing
"""Both norms divide by the plain root mean square / standard deviation: eps is stored and never used."""

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float()
        h = h / h.pow(2).mean(-1, keepdim=True).sqrt()
        return self.weight * h.to(x.dtype)


class LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        h = x.float()
        h = (h - h.mean(-1, keepdim=True)) / h.std(-1, keepdim=True, unbiased=False)
        return self.weight * h.to(x.dtype) + self.bias
