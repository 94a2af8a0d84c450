# attnprep: swiglu
# expect: passed
"""Correct: the three projections called through a dict of lambdas set in __init__ that read
`self` (`self.paths["gate"](x)`), as a config-driven block picks its branches; SiLU on the gate,
times the up branch, then down."""

import torch.nn as nn
import torch.nn.functional as F


class SwiGLU(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)
        self.paths = {
            "gate": lambda x: F.silu(self.w1(x)),
            "up": lambda x: self.w3(x),
            "down": lambda h: self.w2(h),
        }

    def forward(self, x):
        return self.paths["down"](self.paths["gate"](x) * self.paths["up"](x))
