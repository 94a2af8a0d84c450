# attnprep: swiglu
# expect: passed
"""Correct: SwiGLU whose three projections are wrapped in the older torch.nn.utils.spectral_norm hook
(weight_orig, weight_u, weight_v), silu written as x * expit(x)."""
import torch
import torch.nn as nn
from torch.nn.utils import spectral_norm


class SwiGLU(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w1 = spectral_norm(nn.Linear(d_model, d_ff, bias=False))
        self.w2 = spectral_norm(nn.Linear(d_ff, d_model, bias=False))
        self.w3 = spectral_norm(nn.Linear(d_model, d_ff, bias=False))

    def forward(self, x):
        g = self.w1(x)
        return self.w2(g * torch.special.expit(g) * self.w3(x))
