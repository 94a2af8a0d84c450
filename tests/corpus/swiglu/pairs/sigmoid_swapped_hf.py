# attnprep: swiglu
# expect: wrong_output
# diagnosis: swiglu_sigmoid + swiglu_gate_up_swapped
"""Hugging Face names; the activation on up_proj, and a bare sigmoid instead of SiLU."""

import torch
import torch.nn as nn


class SwiGLU(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.gate_proj = nn.Linear(d_model, d_ff, bias=False)
        self.up_proj = nn.Linear(d_model, d_ff, bias=False)
        self.down_proj = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x):
        gated = torch.sigmoid(self.up_proj(x)) * self.gate_proj(x)
        return self.down_proj(gated)
