# attnprep: norms
# expect: passed
"""Correct: The Annotated Transformer's names (a_2, b_2) for LayerNorm with the eps inside the root (the contract's),
RMSNorm's gain named scale; float32 statistics."""
import torch
import torch.nn as nn


class LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.a_2 = nn.Parameter(torch.ones(dim))
        self.b_2 = nn.Parameter(torch.zeros(dim))
        self.eps = eps

    def forward(self, x):
        h = x.float()
        mean = h.mean(-1, keepdim=True)
        std = (h.var(-1, keepdim=True, unbiased=False) + self.eps).sqrt()
        return self.a_2 * ((h - mean) / std).to(x.dtype) + self.b_2


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        h = x.float()
        return self.scale * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)
