# attnprep: norms
# expect: wrong_output
# diagnosis: norm_no_upcast
"""Statistics under `torch.autocast(enabled=False)`, taken to mean 'full precision': autocast off
does not upcast anything, the mean square is computed in the input's dtype. float32 and float64
inputs are exact; float16 overflows."""
import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        with torch.autocast(device_type=x.device.type, enabled=False):
            ms = x.pow(2).mean(dim=-1, keepdim=True)
            y = x * torch.rsqrt(ms + self.eps)
        return self.weight * y


class LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        with torch.autocast(device_type=x.device.type, enabled=False):
            h = x.float()
            mu = h.mean(dim=-1, keepdim=True)
            var = (h - mu).pow(2).mean(dim=-1, keepdim=True)
            y = ((h - mu) * torch.rsqrt(var + self.eps)).to(x.dtype)
        return self.weight * y + self.bias
# bug-line: 19
