# attnprep: norms
# expect: wrong_output
# diagnosis: norm_no_upcast
"""torchao / float8 training habits: `hp_dtype` / `lp_dtype` names, a `to_hp()` helper, comments about
amax and casting, the RMSNorm statistics in the high-precision dtype. The LayerNorm trusts that its
input is already high precision and computes the mean and variance in x's own dtype: right in
float32, wrong in bfloat16 and float16."""

import torch
import torch.nn as nn

hp_dtype = torch.float32


def to_hp(t):
    return t if t.dtype in (torch.float32, torch.float64) else t.to(hp_dtype)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        lp_dtype = x.dtype
        x_hp = to_hp(x)
        x_hp = x_hp * torch.rsqrt(x_hp.square().mean(-1, keepdim=True) + self.eps)
        return self.weight * x_hp.to(lp_dtype)


class LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        # activations reach the norm in high precision (the float8 casts happen inside the linears)
        centred = x - x.mean(-1, keepdim=True)
        var = centred.square().mean(-1, keepdim=True)
        return self.weight * (centred * torch.rsqrt(var + self.eps)) + self.bias
# bug-line: 41, 43
