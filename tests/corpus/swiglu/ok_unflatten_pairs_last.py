# attnprep: swiglu
# expect: passed
"""The interleaved layout read through unflatten(-1, (d_ff, 2)).unbind(-1)."""
import torch
import torch.nn as nn


class SwiGLU(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w_in = nn.Linear(d_model, 2 * d_ff, bias=False)
        self.w_out = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x):
        g, u = self.w_in(x).unflatten(-1, (-1, 2)).unbind(-1)
        return self.w_out(g * torch.sigmoid(g) * u)
