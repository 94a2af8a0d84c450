# attnprep: swiglu
# expect: passed
"""Bare nn.Parameter weights (out, in) named like Hugging Face's, einsum, SiLU written as x·sigmoid(x)."""

import torch
import torch.nn as nn


class SwiGLU(nn.Module):
    def __init__(self, d_model: int, d_ff: int) -> None:
        super().__init__()
        self.gate_proj = nn.Parameter(torch.empty(d_ff, d_model).normal_(0, 0.02))
        self.up_proj = nn.Parameter(torch.empty(d_ff, d_model).normal_(0, 0.02))
        self.down_proj = nn.Parameter(torch.empty(d_model, d_ff).normal_(0, 0.02))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        g = torch.einsum("...d,fd->...f", x, self.gate_proj)
        u = torch.einsum("...d,fd->...f", x, self.up_proj)
        h = g * torch.sigmoid(g) * u
        return torch.einsum("...f,df->...d", h, self.down_proj)
