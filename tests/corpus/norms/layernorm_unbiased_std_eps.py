# attnprep: norms
# expect: wrong_output
# diagnosis: layernorm_unbiased_std_eps
"""The Annotated Transformer's LayerNorm: a_2 * (x - mean) / (std + eps) + b_2, std unbiased."""

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(x.dtype)


class LayerNorm(nn.Module):
    "Construct a layernorm module (See citation for details)."

    def __init__(self, features, eps=1e-5):
        super().__init__()
        self.a_2 = nn.Parameter(torch.ones(features))
        self.b_2 = nn.Parameter(torch.zeros(features))
        self.eps = eps

    def forward(self, x):
        h = x.float()
        mean = h.mean(-1, keepdim=True)
        std = h.std(-1, keepdim=True)
        return self.a_2 * ((h - mean) / (std + self.eps)).to(x.dtype) + self.b_2
