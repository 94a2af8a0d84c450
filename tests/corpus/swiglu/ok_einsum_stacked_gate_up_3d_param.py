# attnprep: swiglu
# expect: passed
"""Correct: gate and up stacked in one (2, d_ff, d_model) parameter, einsum with a leading stack axis."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class SwiGLU(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w13 = nn.Parameter(torch.randn(2, d_ff, d_model) * 0.02)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x):
        gu = torch.einsum("...d,sfd->s...f", x, self.w13)
        return self.w2(F.silu(gu[0]) * gu[1])
