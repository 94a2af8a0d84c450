# attnprep: rmsnorm_backward
# expect: passed
"""The r³ form written out: rms, then dx = w·dout / rms - x · Σ(w·dout·x) / (N · rms³)."""
import torch


def rmsnorm_backward(x: torch.Tensor, weight: torch.Tensor, dout: torch.Tensor, eps: float = 1e-6):
    N = x.shape[-1]
    rms = (x.pow(2).sum(-1, keepdim=True) / N + eps).sqrt()
    wg = weight * dout
    dot = (wg * x).sum(-1, keepdim=True)
    dx = wg / rms - x * dot / (N * rms ** 3)
    dweight = (dout * x / rms).flatten(0, -2).sum(0)
    return dx, dweight
