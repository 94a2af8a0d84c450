# attnprep: norms
# expect: wrong_output
# diagnosis: rmsnorm_subtracts_mean
"""RMSNorm written with torch.var, as if the RMS were the standard deviation (and var's default is unbiased)."""

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.gamma = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x32 = x.float()
        # 均方根：sqrt(var + eps)
        rms = torch.sqrt(torch.var(x32, dim=-1, keepdim=True) + self.eps)
        return (x32 / rms).type_as(x) * self.gamma


class LayerNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.gamma = nn.Parameter(torch.ones(dim))
        self.beta = nn.Parameter(torch.zeros(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x32 = x.float()
        mu = x32.mean(dim=-1, keepdim=True)
        var = torch.var(x32, dim=-1, keepdim=True, unbiased=False)
        y = (x32 - mu) / torch.sqrt(var + self.eps)
        return y.type_as(x) * self.gamma + self.beta
# bug-line: 19
