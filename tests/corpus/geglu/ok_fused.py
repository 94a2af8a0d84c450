# attnprep: geglu
# expect: passed
"""One fused gate+up matrix chunked, bare parameters."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class GeGLU(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.gate = nn.Linear(d_model, d_ff, bias=False)
        self.up = nn.Linear(d_model, d_ff, bias=False)
        self.down = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x):
        w = torch.cat([self.gate.weight, self.up.weight], dim=0)  # (2 d_ff, d_model)
        g, u = (x @ w.T).chunk(2, dim=-1)
        return self.down(nn.GELU(approximate="tanh")(g) * u)
