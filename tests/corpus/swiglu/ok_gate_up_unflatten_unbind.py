# attnprep: swiglu
# expect: passed
"""Correct: gate and up in one nn.Linear(d, 2 * d_ff) whose output is unflattened to (2, d_ff) and
unbound (gate first), as fused MLP kernels lay them out; down_proj plain."""

import torch.nn as nn
import torch.nn.functional as F


class SwiGLU(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.gate_up_proj = nn.Linear(d_model, 2 * d_ff, bias=False)
        self.down_proj = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x):
        gate, up = self.gate_up_proj(x).unflatten(-1, (2, -1)).unbind(-2)
        return self.down_proj(F.silu(gate) * up)
