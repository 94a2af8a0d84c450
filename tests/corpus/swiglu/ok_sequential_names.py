# attnprep: swiglu
# expect: passed
"""Layers named fc1 / fc2 / proj (no contract name, no alias): mapped by shape, the grader trying
both assignments of the two same-shaped layers. Upcasts to float32 inside and casts back."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class SwiGLU(nn.Module):
    def __init__(self, d_model: int, d_ff: int):
        super().__init__()
        self.fc1 = nn.Linear(d_model, d_ff, bias=False)
        self.fc2 = nn.Linear(d_model, d_ff, bias=False)
        self.proj = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = self.fc1(x)
        b = self.fc2(x)
        h = (F.silu(a.float()) * b.float()).to(x.dtype)
        return self.proj(h)
