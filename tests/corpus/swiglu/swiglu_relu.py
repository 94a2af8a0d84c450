# attnprep: swiglu
# expect: wrong_output
# diagnosis: swiglu_relu
"""ReGLU: torch.relu on the gate, projections by einsum on bare matrices."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class SwiGLU(nn.Module):
    def __init__(self, d_model: int, d_ff: int):
        super().__init__()
        self.w1 = nn.Parameter(torch.randn(d_ff, d_model) * 0.02)
        self.w2 = nn.Parameter(torch.randn(d_model, d_ff) * 0.02)
        self.w3 = nn.Parameter(torch.randn(d_ff, d_model) * 0.02)

    def forward(self, x):
        g = torch.einsum("btd,fd->btf", x, self.w1) if x.dim() == 3 else x @ self.w1.T
        u = x @ self.w3.T
        h = torch.relu(g) * u
        return h @ self.w2.T
