# attnprep: swiglu
# expect: wrong_output
# diagnosis: swiglu_gelu
"""Bare F.linear on the layers' weights, with a GELU gate (GeGLU) where SwiGLU uses SiLU."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class SwiGLU(nn.Module):
    def __init__(self, d_model: int, d_ff: int) -> None:
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        g = F.linear(x, self.w1.weight)
        u = F.linear(x, self.w3.weight)
        act = F.gelu(g)
        return F.linear(act * u, self.w2.weight)
# bug-line: 21
