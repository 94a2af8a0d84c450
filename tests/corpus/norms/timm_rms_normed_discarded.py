# attnprep: norms
# expect: wrong_output
"""timm-style norms with type hints; the RMSNorm computes the normalised tensor and then scales the
raw input instead (the normalised one is dropped)."""

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps: float = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        orig_dtype = x.dtype
        x32 = x.float()
        x_normed = x32 * torch.rsqrt(x32.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return self.weight * x32.to(orig_dtype)


class LayerNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps: float = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        orig_dtype = x.dtype
        x32 = x.float()
        u = x32.mean(-1, keepdim=True)
        s = (x32 - u).pow(2).mean(-1, keepdim=True)
        x32 = (x32 - u) / torch.sqrt(s + self.eps)
        return self.weight * x32.to(orig_dtype) + self.bias
# bug-line: 20
