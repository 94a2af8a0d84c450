# attnprep: norms
# expect: wrong_output
# diagnosis: rmsnorm_subtracts_mean
"""Both norms ported from a Flax-style template: each class keeps its switches as class attributes
(`use_mean`, `use_bias`, like flax.linen's LayerNorm(use_bias=..., use_scale=...)), the statistics in
float32 and cast back, `jax.lax.rsqrt`'s habit as torch.rsqrt."""
import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    use_mean = True
    use_bias = False

    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.float()
        if self.use_mean:
            h = h - h.mean(dim=-1, keepdim=True)
        h = h * torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return (h * self.weight.float()).to(x.dtype)


class LayerNorm(nn.Module):
    use_mean = True
    use_bias = True

    def __init__(self, dim: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.float()
        if self.use_mean:
            h = h - h.mean(dim=-1, keepdim=True)
        h = h * torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        h = h * self.weight.float()
        if self.use_bias:
            h = h + self.bias.float()
        return h.to(x.dtype)
# bug-line: 12
