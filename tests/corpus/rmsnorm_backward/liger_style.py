# attnprep: rmsnorm_backward
# expect: passed
"""Liger-Kernel's formula in PyTorch: rstd kept, dx from the row dot product, dweight over 2-D rows."""
import torch


def rmsnorm_backward(x, weight, dout, eps=1e-6):
    shape = x.shape
    N = shape[-1]
    X = x.reshape(-1, N)
    dY = dout.reshape(-1, N)
    rstd = 1.0 / torch.sqrt((X * X).mean(dim=1, keepdim=True) + eps)
    m = dY * weight
    dX = rstd * m - rstd * (rstd * rstd) * (m * X).mean(dim=1, keepdim=True) * X
    dW = (dY * (X * rstd)).sum(dim=0)
    return dX.reshape(shape), dW
