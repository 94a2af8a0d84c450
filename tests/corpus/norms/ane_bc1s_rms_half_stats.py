# attnprep: norms
# expect: wrong_output
# diagnosis: norm_no_upcast
"""Apple ml-ane-transformers' LayerNormANE habit: the features moved to the channel axis of a
(B, C, 1, S) tensor and the statistics taken over dim=1. The LayerNorm upcasts; the RMSNorm computes
its mean of squares in the input's own dtype (fine in float32, off in bfloat16 / float16)."""

import torch
import torch.nn as nn


def to_bc1s(x):
    return x.reshape(-1, x.shape[-1]).transpose(0, 1)[None, :, None, :]  # (1, C, 1, N)


def from_bc1s(y, shape):
    return y[0, :, 0, :].transpose(0, 1).reshape(shape)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = to_bc1s(x)
        h = h * torch.rsqrt(h.pow(2).mean(dim=1, keepdim=True) + self.eps)
        return self.weight * from_bc1s(h, x.shape).to(x.dtype)


class LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        h = to_bc1s(x).float()
        zero_mean = h - h.mean(dim=1, keepdim=True)
        denom = (zero_mean.pow(2).mean(dim=1, keepdim=True) + self.eps).rsqrt()
        out = from_bc1s(zero_mean * denom, x.shape).to(x.dtype)
        return out * self.weight + self.bias
# bug-line: 27
