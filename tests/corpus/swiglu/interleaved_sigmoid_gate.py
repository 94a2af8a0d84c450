# attnprep: swiglu
# expect: wrong_output
# diagnosis: swiglu_sigmoid
"""Buggy: sigmoid(gate) where silu(gate) is meant. Otherwise correct: gate and up interleaved in one Linear(d, 2·d_ff): gate = h[..., 0::2], up = h[..., 1::2] (gpt-oss)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class SwiGLU(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.mlp1 = nn.Linear(d_model, 2 * d_ff, bias=False)
        self.mlp2 = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x):
        h = self.mlp1(x)
        x_glu, x_linear = h[..., 0::2], h[..., 1::2]
        return self.mlp2(torch.sigmoid(x_glu) * x_linear)
# bug-line: 19
