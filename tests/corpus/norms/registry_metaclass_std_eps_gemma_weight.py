# attnprep: norms
# expect: wrong_output
# diagnosis: layernorm_unbiased_std_eps + rmsnorm_one_plus_weight
"""A metaclass registry (`NORMS["rms"]`, `NORMS["layer"]` filled by `class Meta(type)` on class
creation) and a shared `_stats()` staticmethod. Two slips, one per module: LayerNorm is the
Annotated Transformer's `(x - mean) / (x.std(-1) + eps)` (unbiased std, eps outside), and RMSNorm
scales by (1 + weight), Gemma's parametrisation."""

import torch
import torch.nn as nn

NORMS = {}


class Meta(type(nn.Module)):
    def __new__(mcls, name, bases, ns, key=None):
        cls = super().__new__(mcls, name, bases, ns)
        if key:
            NORMS[key] = cls
        return cls


class RMSNorm(nn.Module, metaclass=Meta, key="rms"):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return h.to(x.dtype) * (1.0 + self.weight)


class LayerNorm(nn.Module, metaclass=Meta, key="layer"):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        h = x.float()
        mean = h.mean(-1, keepdim=True)
        std = h.std(-1, keepdim=True)
        return ((h - mean) / (std + self.eps)).to(x.dtype) * self.weight + self.bias
# bug-line: 32, 45, 46
