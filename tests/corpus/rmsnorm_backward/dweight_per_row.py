# attnprep: rmsnorm_backward
# expect: wrong_shape
"""dweight left per row, never summed over the batch."""
import torch


def rmsnorm_backward(x, weight, dout, eps=1e-6):
    rstd = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    xhat = x * rstd
    g = dout * weight
    dx = rstd * (g - xhat * (g * xhat).mean(-1, keepdim=True))
    dweight = dout * xhat
    return dx, dweight
# bug-line: 12
