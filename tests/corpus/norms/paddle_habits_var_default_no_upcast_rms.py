# attnprep: norms
# expect: wrong_output
# diagnosis: norm_unbiased_variance + norm_no_upcast
"""PaddlePaddle habits ported: create_parameter-like helpers with default_initializer, `axis`
keyword names, paddle.var / paddle.mean spelled through small shims, epsilon named epsilon."""
import torch
import torch.nn as nn


def create_parameter(shape, default_initializer):
    return nn.Parameter(default_initializer(shape))


def mean(x, axis, keepdim=True):
    return x.mean(dim=axis, keepdim=keepdim)


def var(x, axis, keepdim=True):
    return torch.var(x, dim=axis, keepdim=keepdim)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.epsilon = eps
        self.weight = create_parameter([dim], torch.ones)

    def forward(self, hidden_states):
        h = hidden_states
        variance = mean(h.pow(2), axis=-1)
        h = torch.rsqrt(variance + self.epsilon) * h
        return h.to(hidden_states.dtype) * self.weight


class LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.epsilon = eps
        self.weight = create_parameter([dim], torch.ones)
        self.bias = create_parameter([dim], torch.zeros)

    def forward(self, x):
        h = x.float()
        mu = mean(h, axis=-1)
        sigma2 = var(h, axis=-1)
        out = (h - mu) / torch.sqrt(sigma2 + self.epsilon)
        return out.to(x.dtype) * self.weight + self.bias
# bug-line: 19, 29
