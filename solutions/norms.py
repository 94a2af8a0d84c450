"""RMSNorm (Llama, DeepSeek, T5) and LayerNorm (the original Transformer, GPT-2, BERT), by hand.

Both normalise each vector over its last dim: LayerNorm re-centres it (subtract the mean) and
re-scales it (divide by the standard deviation, biased, eps inside the square root), then applies a
learned weight and bias; RMSNorm only re-scales, by the root mean square, and has a weight only.
The statistics are computed in float32 whatever the input's dtype, as Llama does (upcast,
normalise, cast back, then scale): x² of a float16 activation of a few hundred already overflows.
"""

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    """y = x / sqrt(mean(x², -1) + eps) * weight (Zhang & Sennrich, 2019)."""

    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))  # (dim,)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        input_dtype = x.dtype
        h = x.to(torch.promote_types(input_dtype, torch.float32))  # float32 (float64 stays float64)
        variance = h.pow(2).mean(-1, keepdim=True)  # (..., 1): mean of squares over the last dim
        h = h * torch.rsqrt(variance + self.eps)  # (..., dim), eps inside the square root
        return self.weight * h.to(input_dtype)  # cast back, then scale: (dim,) * (..., dim)


class LayerNorm(nn.Module):
    """y = (x - mean) / sqrt(var + eps) * weight + bias, var biased, over the last dim (Ba et al., 2016)."""

    def __init__(self, dim: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))  # (dim,)
        self.bias = nn.Parameter(torch.zeros(dim))  # (dim,)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        input_dtype = x.dtype
        h = x.to(torch.promote_types(input_dtype, torch.float32))
        mean = h.mean(-1, keepdim=True)  # (..., 1)
        variance = (h - mean).pow(2).mean(-1, keepdim=True)  # (..., 1): biased, divided by dim
        h = (h - mean) * torch.rsqrt(variance + self.eps)  # (..., dim)
        return self.weight * h.to(input_dtype) + self.bias
