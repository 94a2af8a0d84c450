# attnprep: swiglu
# expect: passed
"""Correct: [W13, W2] in a ParameterList, W13 = [w1; w3] rows as fused kernels store them, chunked after one F.linear."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class SwiGLU(nn.Module):
    """[W13, W2] in a ParameterList: W13 = [w1; w3] rows (gate first), as fused kernels store them."""

    def __init__(self, d_model, d_ff):
        super().__init__()
        self.ws = nn.ParameterList([nn.Parameter(torch.randn(2 * d_ff, d_model) * d_model ** -0.5),
                                    nn.Parameter(torch.randn(d_model, d_ff) * d_ff ** -0.5)])

    def forward(self, x):
        w13, w2 = self.ws
        gate, up = F.linear(x, w13).chunk(2, dim=-1)
        return F.linear(F.silu(gate) * up, w2)
