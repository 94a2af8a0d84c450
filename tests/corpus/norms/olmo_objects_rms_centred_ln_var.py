# attnprep: norms
# expect: wrong_output
# diagnosis: rmsnorm_subtracts_mean + norm_unbiased_variance
"""Two objects, a mistake in each, written the way OLMo's norms read (og_dtype, upcast, F.* calls
avoided): the RMSNorm centres x before its mean square; the LayerNorm uses torch.var's default
(unbiased) variance."""
import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        og_dtype = x.dtype
        x = x.to(torch.float32)
        x = x - x.mean(-1, keepdim=True)
        variance = x.pow(2).mean(-1, keepdim=True)
        x = x * torch.rsqrt(variance + self.eps)
        return self.weight * x.to(og_dtype)


class LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        og_dtype = x.dtype
        x = x.to(torch.float32)
        mean = x.mean(-1, keepdim=True)
        var = x.var(-1, keepdim=True)
        x = (x - mean) * torch.rsqrt(var + self.eps)
        return self.weight * x.to(og_dtype) + self.bias
# bug-line: 20, 37
