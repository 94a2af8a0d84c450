# attnprep: geglu
# expect: passed
"""einsum over bare weights."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class GeGLU(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.gate_proj = nn.Linear(d_model, d_ff, bias=False)
        self.up_proj = nn.Linear(d_model, d_ff, bias=False)
        self.down_proj = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x):
        g = torch.einsum("...d,fd->...f", x, self.gate_proj.weight)
        u = torch.einsum("...d,fd->...f", x, self.up_proj.weight)
        return torch.einsum("...f,df->...d", F.gelu(g, approximate="tanh") * u, self.down_proj.weight)
