# attnprep: norms
# expect: passed
"""torchtune-style norms whose 1-D parameters have names of their own (RMSNorm.gain; LayerNorm.shift declared before LayerNorm.gain), statistics in float32."""

import torch
from torch import Tensor, nn


class RMSNorm(nn.Module):
    """Root-mean-square norm (torchtune's modules/rms_norm.py, renamed parameters)."""

    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.gain = nn.Parameter(torch.ones(dim))

    def forward(self, x: Tensor) -> Tensor:
        x_fp32 = x.float()
        x_normed = x_fp32 * torch.rsqrt(x_fp32.pow(2).mean(-1, keepdim=True) + self.eps)
        return x_normed.type_as(x) * self.gain


class LayerNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.shift = nn.Parameter(torch.zeros(dim))
        self.gain = nn.Parameter(torch.ones(dim))

    def forward(self, x: Tensor) -> Tensor:
        h = x.float()
        mu = h.mean(-1, keepdim=True)
        var = (h - mu).pow(2).mean(-1, keepdim=True)
        return ((h - mu) * torch.rsqrt(var + self.eps)).type_as(x) * self.gain + self.shift
