# attnprep: swiglu
# expect: wrong_output
# diagnosis: swiglu_gelu
"""Gemma's MLP ported with its config: a dataclass whose `hidden_activation` string chooses the gate's
activation in forward (`gelu_pytorch_tanh` for Gemma, `silu` for Llama), HF's gate_proj / up_proj /
down_proj names, the branch written as an if / else on the config."""
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class MLPConfig:
    hidden_size: int
    intermediate_size: int
    hidden_activation: str = "gelu_pytorch_tanh"


class SwiGLU(nn.Module):
    def __init__(self, d_model: int, d_ff: int):
        super().__init__()
        self.config = MLPConfig(hidden_size=d_model, intermediate_size=d_ff)
        self.gate_proj = nn.Linear(d_model, d_ff, bias=False)
        self.up_proj = nn.Linear(d_model, d_ff, bias=False)
        self.down_proj = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate = self.gate_proj(x)
        if self.config.hidden_activation == "gelu_pytorch_tanh":
            gate = F.gelu(gate, approximate="tanh")
        else:
            gate = F.silu(gate)
        return self.down_proj(gate * self.up_proj(x))
# bug-line: 18
