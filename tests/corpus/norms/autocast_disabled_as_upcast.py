# attnprep: norms
# expect: wrong_output
# diagnosis: norm_no_upcast
"""Precision handled with torch.autocast(enabled=False) blocks around the statistics, the way
mixed-precision training code fences its norms, believing the block computes in float32."""
import torch
import torch.nn as nn


def _stats_block(x):
    return torch.autocast(device_type=x.device.type, enabled=False)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        with _stats_block(x):
            h = x
            h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return h.to(x.dtype) * self.weight


class LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        with _stats_block(x):
            h = x.float()
            mean = h.mean(-1, keepdim=True)
            var = (h - mean).pow(2).mean(-1, keepdim=True)
            h = (h - mean) * torch.rsqrt(var + self.eps)
        return h.to(x.dtype) * self.weight + self.bias
# bug-line: 22
