# attnprep: norms
# expect: passed
"""torchtune-like: gains named scale / shift, typed, statistics by einsum in float32, F.linear-free."""

from typing import Optional

import torch
from torch import Tensor, nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.normalized_shape = (dim,)
        self.eps: float = eps
        self.scale = nn.Parameter(torch.ones(dim))

    def forward(self, x: Tensor) -> Tensor:
        x_fp32 = x.float()
        ms = torch.einsum("...d,...d->...", x_fp32, x_fp32).unsqueeze(-1) / x.shape[-1]
        x_normed = (x_fp32 * torch.rsqrt(ms + self.eps)).type_as(x)
        return x_normed * self.scale


class LayerNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps: float = eps
        self.scale = nn.Parameter(torch.ones(dim))
        self.shift: Optional[nn.Parameter] = nn.Parameter(torch.zeros(dim))

    def forward(self, x: Tensor) -> Tensor:
        h = x.float()
        centred = h - h.mean(dim=-1, keepdim=True)
        var = torch.einsum("...d,...d->...", centred, centred).unsqueeze(-1) / x.shape[-1]
        out = (centred * torch.rsqrt(var + self.eps)).type_as(x)
        return out * self.scale + self.shift
