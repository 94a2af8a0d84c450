# attnprep: norms
# expect: wrong_output
# diagnosis: norm_no_upcast
"""Audio / conv1d habits (WaveNet, EnCodec): the features go to the channel axis, (N, C, L), through
two small helpers both norms share, and the statistics are taken over dim=1. The LayerNorm upcasts
to float32 first; the RMSNorm squares and averages in the input's own dtype (right in float32, off
in bfloat16 / float16)."""

import torch
import torch.nn as nn


def channels_first(x):
    return x.reshape(-1, 1, x.shape[-1]).permute(1, 2, 0)  # (1, C, L): every token a time step


def channels_last(y, like):
    return y.permute(2, 0, 1).reshape(like.shape)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        y = channels_first(x)
        ms = torch.mean(y * y, dim=1, keepdim=True)
        y = y / torch.sqrt(ms + self.eps)
        return channels_last(y, x).to(x.dtype) * self.weight


class LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        y = channels_first(x).to(torch.float32)
        mu = torch.mean(y, dim=1, keepdim=True)
        var = torch.mean((y - mu) ** 2, dim=1, keepdim=True)
        y = (y - mu) / torch.sqrt(var + self.eps)
        return channels_last(y, x).to(x.dtype) * self.weight + self.bias
# bug-line: 28
