# attnprep: norms
# expect: passed
"""Correct: inputs flattened to 2-D, statistics with torch.einsum('ij,ij->i') in float32, reshaped back."""
import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.dim, self.eps = dim, eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        h = x.reshape(-1, self.dim).float()
        ss = torch.einsum("ij,ij->i", h, h) / self.dim
        y = h * (ss + self.eps).rsqrt()[:, None]
        return y.to(x.dtype).reshape(shape) * self.weight


class LayerNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.dim, self.eps = dim, eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        h = x.reshape(-1, self.dim).float()
        c = h - h.sum(1, keepdim=True) / self.dim
        var = torch.einsum("ij,ij->i", c, c) / self.dim
        y = c / torch.sqrt(var + self.eps)[:, None]
        return y.to(x.dtype).reshape(shape) * self.weight + self.bias
