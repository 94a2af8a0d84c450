# attnprep: norms
# expect: wrong_output
# diagnosis: rmsnorm_subtracts_mean + norm_unbiased_variance
"""flax habits ported to torch (`scale` / `bias` parameters, float32 statistics, type hints); two
objects, two mistakes: RMSNorm centres x before its mean square (a LayerNorm without bias), and
LayerNorm takes torch.var's default, the unbiased variance."""
import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.scale = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x32 = x.to(torch.float32)
        centred = x32 - x32.mean(dim=-1, keepdim=True)
        mean_square = torch.square(centred).mean(dim=-1, keepdim=True)
        y = centred * torch.rsqrt(mean_square + self.eps)
        return y.to(x.dtype) * self.scale


class LayerNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.scale = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x32 = x.to(torch.float32)
        mean = x32.mean(dim=-1, keepdim=True)
        var = x32.var(dim=-1, keepdim=True)
        y = (x32 - mean) * torch.rsqrt(var + self.eps)
        return y.to(x.dtype) * self.scale + self.bias
# bug-line: 19, 35
