# attnprep: swiglu
# expect: wrong_output
# diagnosis: swiglu_gelu + swiglu_gate_up_swapped
"""Phi-ish fused gate_up weight split as (up, gate) where the contract's w1 is the gate, and GELU
(tanh) where SiLU belongs. Bare F.linear on the three weights."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class SwiGLU(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)

    def forward(self, x):
        up = F.linear(x, self.w1.weight)
        gate = F.linear(x, self.w3.weight)
        return F.linear(F.gelu(gate, approximate="tanh") * up, self.w2.weight)
