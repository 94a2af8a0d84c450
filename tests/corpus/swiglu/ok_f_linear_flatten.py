# attnprep: swiglu
# expect: passed
"""F.linear on bare weights, the input flattened to (N, d_model) and viewed back: the way a
hand-written kernel wrapper does it. Type hints, interview-notes style."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class SwiGLU(nn.Module):
    def __init__(self, d_model: int, d_ff: int) -> None:
        super().__init__()
        self.w1 = nn.Parameter(torch.empty(d_ff, d_model))  # gate
        self.w3 = nn.Parameter(torch.empty(d_ff, d_model))  # up
        self.w2 = nn.Parameter(torch.empty(d_model, d_ff))  # down
        for w in (self.w1, self.w2, self.w3):
            nn.init.kaiming_uniform_(w, a=5 ** 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        x2d = x.reshape(-1, shape[-1])  # (N, d_model)
        gate = F.silu(F.linear(x2d, self.w1))  # (N, d_ff)
        up = F.linear(x2d, self.w3)  # (N, d_ff)
        out = F.linear(gate * up, self.w2)  # (N, d_model)
        return out.view(*shape[:-1], -1)
