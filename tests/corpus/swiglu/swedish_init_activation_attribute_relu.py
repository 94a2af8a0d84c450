# attnprep: swiglu
# expect: wrong_output
# diagnosis: swiglu_relu
"""Swedish names and comments; the activation kept on the instance as a plain attribute set in
__init__ (self.aktivering), called later through it."""
import torch
import torch.nn as nn


class SwiGLU(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.grind = nn.Linear(d_model, d_ff, bias=False)  # w1: grinden
        self.upp = nn.Linear(d_model, d_ff, bias=False)  # w3: uppåt
        self.ned = nn.Linear(d_ff, d_model, bias=False)  # w2: nedåt
        self.aktivering = torch.relu

    def forward(self, x):
        # grinden aktiveras, gånger uppåt-grenen, sedan ned till d_model
        g = self.aktivering(self.grind(x))
        return self.ned(g * self.upp(x))
# bug-line: 16
