# attnprep: swiglu
# expect: passed
"""Correct: silu written as g * torch.special.expit(g), the projections applied as x @ W.mT on the
nn.Linear weights, reset_parameters with normal_ std = d ** -0.5 called from __init__."""

import torch
import torch.nn as nn


class SwiGLU(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)
        self.reset_parameters()

    def reset_parameters(self):
        nn.init.normal_(self.w1.weight, std=self.w1.in_features ** -0.5)
        nn.init.normal_(self.w3.weight, std=self.w3.in_features ** -0.5)
        nn.init.normal_(self.w2.weight, std=self.w2.in_features ** -0.5)

    def forward(self, x):
        g = x @ self.w1.weight.mT
        u = x @ self.w3.weight.mT
        return (g * torch.special.expit(g) * u) @ self.w2.weight.mT
