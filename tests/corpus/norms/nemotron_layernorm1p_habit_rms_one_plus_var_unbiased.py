# attnprep: norms
# expect: wrong_output
# diagnosis: rmsnorm_one_plus_weight + norm_unbiased_variance
"""Nemotron's habits (NemotronLayerNorm1P: a zero-centred gamma applied as 1 + weight, the input cast
to float32 under the hood, normalized_shape), carried over to an RMSNorm; the RMSNorm scaled by
(1 + weight), and the LayerNorm's variance from torch.var's default (unbiased)."""
import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.normalized_shape = (dim,)
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        args_dtype = x.dtype
        x32 = x.to(torch.float32)
        x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return (1 + self.weight) * x32.to(args_dtype)  # LayerNorm1P-style gamma


class LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.normalized_shape = (dim,)
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        args_dtype = x.dtype
        x32 = x.to(torch.float32)
        mean = x32.mean(-1, keepdim=True)
        var = torch.var(x32, dim=-1, keepdim=True)
        x32 = (x32 - mean) / torch.sqrt(var + self.eps)
        return self.weight * x32.to(args_dtype) + self.bias
# bug-line: 22, 37
