# attnprep: swiglu
# expect: passed
"""One fused gate_up_proj (d_model -> 2 * d_ff), chunked into gate and up, as vLLM's
MergedColumnParallelLinear + SiluAndMul and Phi-3's MLP compute it."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class SwiGLU(nn.Module):
    def __init__(self, d_model: int, d_ff: int):
        super().__init__()
        self.gate_up_proj = nn.Linear(d_model, 2 * d_ff, bias=False)
        self.down_proj = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        up_states = self.gate_up_proj(hidden_states)  # (..., 2 * d_ff)
        gate, up_states = up_states.chunk(2, dim=-1)  # (..., d_ff) each
        up_states = up_states * F.silu(gate)
        return self.down_proj(up_states)
