# attnprep: swiglu
# expect: passed
"""Correct: the three layers made in bfloat16 (gpt-fast builds models so), each weight cast to the
input's dtype at use with F.linear(x, w.to(x.dtype))."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class SwiGLU(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False, dtype=torch.bfloat16)
        self.w2 = nn.Linear(d_ff, d_model, bias=False, dtype=torch.bfloat16)
        self.w3 = nn.Linear(d_model, d_ff, bias=False, dtype=torch.bfloat16)

    def forward(self, x):
        lin = lambda layer, t: F.linear(t, layer.weight.to(t.dtype))
        return lin(self.w2, F.silu(lin(self.w1, x)) * lin(self.w3, x))
