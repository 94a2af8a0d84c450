# attnprep: rmsnorm_backward
# expect: wrong_output
# diagnosis: rmsnorm_backward_sum_not_mean
"""The r³ form with the row dot product, the 1/N forgotten."""
import torch


def rmsnorm_backward(x: torch.Tensor, weight: torch.Tensor, dout: torch.Tensor, eps: float = 1e-6):
    N = x.shape[-1]
    rms = (x.pow(2).mean(-1, keepdim=True) + eps).sqrt()
    wg = weight * dout
    dot = (wg * x).sum(-1, keepdim=True)
    dx = wg / rms - x * dot / rms ** 3
    dweight = (dout * x / rms).reshape(-1, N).sum(0)
    return dx, dweight
# bug-line: 12
