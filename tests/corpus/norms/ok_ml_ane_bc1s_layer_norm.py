# attnprep: norms
# expect: passed
"""Apple's ml-ane-transformers habits: activations in the (B, C, 1, S) layout the Neural Engine
prefers, a LayerNormANE that normalises over dim 1 (channels) of that layout; here inputs of any rank
(..., C) are moved into (N, C, 1, S) and back, statistics in float32."""
import torch
import torch.nn as nn


def to_ane(x):
    lead = x.shape[:-1]
    flat = x.reshape(1, -1, x.shape[-1])               # (1, S, C)
    return flat.permute(0, 2, 1).unsqueeze(2), lead    # (1, C, 1, S)


def from_ane(y, lead):
    return y.squeeze(2).permute(0, 2, 1).reshape(*lead, y.shape[1])


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h, lead = to_ane(x.float())
        ms = h.pow(2).mean(dim=1, keepdim=True)        # (1, 1, 1, S)
        h = h * torch.rsqrt(ms + self.eps)
        return from_ane(h, lead).to(x.dtype) * self.weight


class LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        h, lead = to_ane(x.float())
        mean = h.mean(dim=1, keepdim=True)
        zero_mean = h - mean
        denom = (zero_mean.pow(2).mean(dim=1, keepdim=True) + self.eps).rsqrt()
        out = from_ane(zero_mean * denom, lead).to(x.dtype)
        return out * self.weight + self.bias
