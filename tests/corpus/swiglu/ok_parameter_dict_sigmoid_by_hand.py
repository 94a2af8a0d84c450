# attnprep: swiglu
# expect: passed
"""Correct: a ParameterDict holding w1/w2/w3 matrices, F.linear, silu written as x * torch.sigmoid(x)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class SwiGLU(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w = nn.ParameterDict({
            "w1": nn.Parameter(torch.randn(d_ff, d_model) * d_model ** -0.5),
            "w3": nn.Parameter(torch.randn(d_ff, d_model) * d_model ** -0.5),
            "w2": nn.Parameter(torch.randn(d_model, d_ff) * d_ff ** -0.5),
        })

    def forward(self, x):
        g = F.linear(x, self.w["w1"])
        return F.linear(g * torch.sigmoid(g) * F.linear(x, self.w["w3"]), self.w["w2"])
