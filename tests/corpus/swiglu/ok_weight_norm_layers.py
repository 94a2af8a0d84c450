# attnprep: swiglu
# expect: passed
"""Correct: each layer wrapped in torch.nn.utils.parametrizations.weight_norm (a training habit), no bias."""
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.parametrizations import weight_norm


class SwiGLU(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w1 = weight_norm(nn.Linear(d_model, d_ff, bias=False))
        self.w3 = weight_norm(nn.Linear(d_model, d_ff, bias=False))
        self.w2 = weight_norm(nn.Linear(d_ff, d_model, bias=False))

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))
