# attnprep: swiglu
# expect: passed
"""Flax-like: the three kernels kept as (in, out) Parameters named gate_proj / up_proj / down_proj and
applied with einsum; silu written as x * sigmoid(x): correct."""

import torch
import torch.nn as nn


class _Kernel(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(d_out, d_in))
        nn.init.normal_(self.weight, std=d_in ** -0.5)

    def forward(self, x):
        return torch.einsum("...i,oi->...o", x, self.weight)


class SwiGLU(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.gate_proj = _Kernel(d_model, d_ff)
        self.up_proj = _Kernel(d_model, d_ff)
        self.down_proj = _Kernel(d_ff, d_model)

    def forward(self, x):
        g = self.gate_proj(x)
        return self.down_proj(g * torch.sigmoid(g) * self.up_proj(x))
