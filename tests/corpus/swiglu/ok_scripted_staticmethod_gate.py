# attnprep: swiglu
# expect: passed
"""Correct: a plain SwiGLU module whose gated activation is a TorchScript function kept as a class
attribute (act = staticmethod(scripted)), silu written as x·σ(x)."""
import torch
import torch.nn as nn


@torch.jit.script
def _swish_gate(g: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    return g * torch.sigmoid(g) * u


class SwiGLU(nn.Module):
    act = staticmethod(_swish_gate)

    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)

    def forward(self, x):
        return self.w2(self.act(self.w1(x), self.w3(x)))
