# attnprep: norms
# expect: wrong_output
# diagnosis: norm_unbiased_variance
"""Flax linen habits: param_dtype / use_scale / use_bias flags, _compute_stats returning mean and var."""
import torch
import torch.nn as nn


def _compute_stats(x: torch.Tensor, use_mean: bool):
    x32 = x.float() if x.dtype in (torch.float16, torch.bfloat16) else x
    mean = x32.mean(-1, keepdim=True) if use_mean else torch.zeros_like(x32[..., :1])
    mean2 = x32.pow(2).mean(-1, keepdim=True)
    if not use_mean:
        return mean, mean2
    var = torch.var(x32, dim=-1, keepdim=True)
    return mean, var


def _normalize(x, mean, var, scale, bias, eps):
    x32 = x.float() if x.dtype in (torch.float16, torch.bfloat16) else x
    y = (x32 - mean) * torch.rsqrt(var + eps)
    y = y.to(x.dtype)
    if scale is not None:
        y = y * scale
    if bias is not None:
        y = y + bias
    return y


class RMSNorm(nn.Module):
    use_scale = True

    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.epsilon = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        mean, mean2 = _compute_stats(x, use_mean=False)
        return _normalize(x, mean, mean2, self.weight, None, self.epsilon)


class LayerNorm(nn.Module):
    use_scale = True
    use_bias = True

    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.epsilon = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        mean, var = _compute_stats(x, use_mean=True)
        return _normalize(x, mean, var, self.weight, self.bias, self.epsilon)
# bug-line: 15
