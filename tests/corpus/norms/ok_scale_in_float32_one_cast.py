# attnprep: norms
# expect: passed
"""Correct: normalise and scale in float32 with a single cast at the end (Gemma-3's order); LayerNorm's affine as torch.addcmul in float32."""
import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    """Gemma-3-style order: normalise and scale in float32, one cast at the end."""

    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        output = self._norm(x.float())
        output = output * self.weight.float()
        return output.type_as(x)


class LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        h = x.to(torch.float32)
        mu = h.mean(dim=-1, keepdim=True)
        var = h.var(dim=-1, keepdim=True, unbiased=False)
        y = torch.addcmul(self.bias.float(), (h - mu) * torch.rsqrt(var + self.eps), self.weight.float())
        return y.to(x.dtype)
