# attnprep: swiglu
# expect: wrong_output
# diagnosis: swiglu_silu_on_product
"""The activation chosen through functools.partial (act = partial(F.silu, inplace=False)) and the
GLU written as act(gate * up): the SiLU is applied to the product instead of to the gate alone."""

import functools

import torch.nn as nn
import torch.nn.functional as F


class SwiGLU(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.act = functools.partial(F.silu, inplace=False)
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)

    def forward(self, x):
        gate, up = self.w1(x), self.w3(x)
        return self.w2(self.act(gate * up))
# bug-line: 23
