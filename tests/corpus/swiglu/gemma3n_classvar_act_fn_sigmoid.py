# attnprep: swiglu
# expect: wrong_output
# diagnosis: swiglu_sigmoid
"""Gemma-3n's MLP naming (gate_proj / up_proj / down_proj, activation_sparsity 0.0: off) with the
activation chosen once as a ClassVar staticmethod."""
from typing import ClassVar

import torch
import torch.nn as nn
import torch.nn.functional as F


class SwiGLU(nn.Module):
    act_fn: ClassVar = staticmethod(torch.sigmoid)
    activation_sparsity: ClassVar[float] = 0.0

    def __init__(self, d_model, d_ff):
        super().__init__()
        self.gate_proj = nn.Linear(d_model, d_ff, bias=False)
        self.up_proj = nn.Linear(d_model, d_ff, bias=False)
        self.down_proj = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x):
        gate = self.gate_proj(x)
        if self.activation_sparsity > 0.0:
            raise NotImplementedError("gaussian top-k sparsity is not used here")
        return self.down_proj(self.act_fn(gate) * self.up_proj(x))
# bug-line: 14
