# attnprep: swiglu
# expect: wrong_output
# diagnosis: swiglu_no_activation
"""The bilinear variant: the gate never goes through SiLU."""

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
        h = self.w1(x) * self.w3(x)
        return self.w2(h)
