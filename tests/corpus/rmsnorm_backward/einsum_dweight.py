# attnprep: rmsnorm_backward
# expect: passed
"""einsum for the weight gradient, rsqrt and a float64-safe eps, no reshape."""
import torch


def rmsnorm_backward(x, weight, dout, eps=1e-6):
    inv = torch.rsqrt(torch.mean(x ** 2, dim=-1, keepdim=True) + eps)
    xn = x * inv
    dims = list(range(x.dim() - 1))
    dweight = (dout * xn).sum(dim=dims) if dims else dout * xn
    gx = dout * weight
    proj = torch.einsum("...n,...n->...", gx, xn).unsqueeze(-1) / x.shape[-1]
    dx = inv * (gx - xn * proj)
    return dx, dweight
