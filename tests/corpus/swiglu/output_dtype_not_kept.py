# attnprep: swiglu
# expect: wrong_output
# diagnosis: output_dtype_not_kept
"""Computes in float32 for safety and forgets to cast back: right in float32, a float32 output for a bfloat16 input."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class SwiGLU(nn.Module):
    def __init__(self, d_model: int, d_ff: int):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)

    def forward(self, x):
        gate = self.w1(x).float()
        up = self.w3(x).float()
        h = F.silu(gate) * up
        return F.linear(h, self.w2.weight.float())
