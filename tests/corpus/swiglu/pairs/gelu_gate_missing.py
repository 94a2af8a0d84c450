# attnprep: swiglu
# expect: wrong_output
# diagnosis: swiglu_gelu + swiglu_gate_missing
"""A GPT-2 MLP in SwiGLU's clothes: GELU, and the up branch never multiplied in."""

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
        h = F.gelu(self.w1(x))
        return self.w2(h)
