"""GeGLU, the feed-forward block of T5 v1.1, PaLI and Gemma (Shazeer, 2020).

Two projections of the token to the hidden width: a gate, passed through GELU (tanh approximation,
as Gemma), and an up projection, kept linear; their elementwise product is projected back down.
No biases. Each token is transformed on its own: x may have any number of leading dims.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class GeGLU(nn.Module):
    """out = down(gelu_tanh(gate(x)) * up(x)): a gated linear unit with a GELU gate."""

    def __init__(self, d_model: int, d_ff: int):
        super().__init__()
        self.gate_proj = nn.Linear(d_model, d_ff, bias=False)  # gate
        self.up_proj = nn.Linear(d_model, d_ff, bias=False)  # up
        self.down_proj = nn.Linear(d_ff, d_model, bias=False)  # down

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # x: (..., d_model)
        gate = self.gate_proj(x)  # (..., d_ff)
        up = self.up_proj(x)  # (..., d_ff)
        h = F.gelu(gate, approximate="tanh") * up  # (..., d_ff): the GELU gate on the linear branch
        return self.down_proj(h)  # (..., d_model)
