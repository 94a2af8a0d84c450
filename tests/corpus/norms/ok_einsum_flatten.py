# attnprep: norms
# expect: passed
"""Any rank by flattening to (N, dim) and back; the mean square by einsum('nd,nd->n'); weight
applied in float32 and one cast at the end (DeepSeek-style)."""

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.dim, self.eps = dim, eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        shape = x.shape
        h = x.reshape(-1, self.dim).float()
        ms = torch.einsum("nd,nd->n", h, h) / self.dim
        y = h * torch.rsqrt(ms + self.eps)[:, None] * self.weight.float()
        return y.reshape(shape).to(x.dtype)


class LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.dim, self.eps = dim, eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        shape = x.shape
        h = x.reshape(-1, self.dim).float()
        c = h - h.mean(1, keepdim=True)
        var = torch.einsum("nd,nd->n", c, c)[:, None] / self.dim
        y = c / torch.sqrt(var + self.eps) * self.weight.float() + self.bias.float()
        return y.reshape(shape).to(x.dtype)
