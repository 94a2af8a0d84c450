# attnprep: rmsnorm_backward
# expect: wrong_output
# diagnosis: rmsnorm_backward_raw_x
"""Written by `attnprep dev corpus rmsnorm_backward`: the reference with the edit of rmsnorm_backward_raw_x."""
"""RMSNorm's backward pass by hand: the gradients of sum(rmsnorm(x, weight) * dout).

Forward over the last dim of size N: rstd = 1 / sqrt(mean(x²) + eps), xhat = x · rstd,
y = xhat · weight. Backward with dout = ∂L/∂y and g = dout · weight:
    dweight = Σ over every row of dout · xhat        (N,)
    dx = rstd · (g - xhat · mean(g · xhat))          (..., N)
The second term is the projection every normalisation's backward has: x also moves rstd.
"""

import torch


def rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """The forward pass whose gradients rmsnorm_backward computes (autograd of it grades them)."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight  # (..., N)


def rmsnorm_backward(x: torch.Tensor, weight: torch.Tensor, dout: torch.Tensor,
                     eps: float = 1e-6) -> tuple[torch.Tensor, torch.Tensor]:
    """(dx, dweight): the gradients of sum(rmsnorm(x, weight, eps) * dout), by hand."""
    N = x.size(-1)
    rstd = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)  # (..., 1): 1 / rms(x), recomputed
    xhat = x * rstd  # (..., N): the normalised x
    dweight = (dout * xhat).reshape(-1, N).sum(dim=0)  # (N,): summed over every row
    g = dout * weight  # (..., N): the gradient reaching xhat
    dx = rstd * (g - x * (g * x).mean(-1, keepdim=True))  # (..., N): x moves rstd too
    return dx, dweight
