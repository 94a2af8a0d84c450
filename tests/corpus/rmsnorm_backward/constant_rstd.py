# attnprep: rmsnorm_backward
# expect: wrong_output
# diagnosis: rmsnorm_backward_no_projection
"""rstd treated as a constant: only the direct path through x."""
import torch


def rmsnorm_backward(x, weight, dout, eps=1e-6):
    N = x.shape[-1]
    rstd = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    dweight = (dout * x * rstd).reshape(-1, N).sum(0)
    dx = dout * weight * rstd
    return dx, dweight
# bug-line: 12
