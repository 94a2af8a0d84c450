# attnprep: swiglu
# expect: passed
"""Correct: gate = Sequential(Linear, SiLU), up a Linear, down a Sequential of one Linear: w1 and w3 told apart by shape and outputs only."""
import torch.nn as nn


class SwiGLU(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.gate = nn.Sequential(nn.Linear(d_model, d_ff, bias=False), nn.SiLU())
        self.up = nn.Linear(d_model, d_ff, bias=False)
        self.down = nn.Sequential(nn.Linear(d_ff, d_model, bias=False))

    def forward(self, x):
        return self.down(self.gate(x) * self.up(x))
