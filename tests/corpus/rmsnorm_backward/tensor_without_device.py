# attnprep: rmsnorm_backward
# expect: error
# diagnosis: tensor_without_device
"""dweight accumulated row by row in a zeros(N) made without device=x.device: fails on a GPU."""
import torch


def rmsnorm_backward(x, weight, dout, eps=1e-6):
    N = x.shape[-1]
    rstd = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    xhat = x * rstd
    dweight = torch.zeros(N, dtype=x.dtype)
    for row in (dout * xhat).reshape(-1, N):
        dweight = dweight + row
    g = dout * weight
    dx = rstd * (g - xhat * (g * xhat).mean(-1, keepdim=True))
    return dx, dweight
# bug-line: 12
