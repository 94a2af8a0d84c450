# attnprep: norms
# expect: wrong_output
# diagnosis: norm_eps_convention
"""A Keras port: tf.nn.moments-like helper returning (mean, variance) with keepdims, tf.math.rsqrt,
`axis=-1`, and the constructors' keyword `epsilon` with Keras's own LayerNormalization default."""
import torch
from torch import nn


def moments(x, axes=-1, keepdims=True):
    mean = torch.mean(x, dim=axes, keepdim=keepdims)
    variance = torch.mean(torch.square(x - mean), dim=axes, keepdim=keepdims)
    return mean, variance


class RMSNorm(nn.Module):
    def __init__(self, dim, epsilon=1e-6):
        super().__init__()
        self.eps = epsilon
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, inputs):
        x = inputs.to(torch.float32)
        ms = torch.mean(torch.square(x), dim=-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(ms + self.eps)).to(inputs.dtype)


class LayerNorm(nn.Module):
    def __init__(self, dim, epsilon=1e-3):
        super().__init__()
        self.eps = epsilon
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, inputs):
        x = inputs.to(torch.float32)
        mean, variance = moments(x, axes=-1, keepdims=True)
        outputs = (x - mean) * torch.rsqrt(variance + self.eps)
        return self.weight * outputs.to(inputs.dtype) + self.bias
# bug-line: 29
