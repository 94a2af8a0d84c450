# attnprep: norms
# expect: wrong_output
# diagnosis: norm_unbiased_variance
"""MXNet Gluon habits ported: a hybrid_forward(F, x, gamma, beta) that receives the op namespace and its
parameters as arguments, forward() handing them over; LayerNorm centres x first and takes the variance
of the centred values with the namespace's var (torch.var: unbiased unless told otherwise)."""
import torch
import torch.nn as nn


class _HybridNorm(nn.Module):
    def forward(self, x):
        params = [p for p in (getattr(self, "gamma", None), getattr(self, "beta", None)) if p is not None]
        return self.hybrid_forward(torch, x, *params)


class RMSNorm(_HybridNorm):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self._epsilon = eps
        self.gamma = nn.Parameter(torch.ones(dim))

    def hybrid_forward(self, F, x, gamma):
        xf = x.to(F.float32)
        ms = F.mean(F.square(xf), dim=-1, keepdim=True)
        return (xf * F.rsqrt(ms + self._epsilon)).to(x.dtype) * gamma


class LayerNorm(_HybridNorm):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self._epsilon = eps
        self.gamma = nn.Parameter(torch.ones(dim))
        self.beta = nn.Parameter(torch.zeros(dim))

    def hybrid_forward(self, F, x, gamma, beta):
        xf = x.to(F.float32)
        centred = xf - F.mean(xf, dim=-1, keepdim=True)

        # the spread of the centred values, over the normalised axis
        var = F.var(centred, dim=-1, keepdim=True)
        out = centred * F.rsqrt(var + self._epsilon)
        return out.to(x.dtype) * gamma + beta
# bug-line: 41
