# attnprep: swiglu
# expect: wrong_output
# diagnosis: swiglu_silu_on_product
"""LitGPT's LLaMAMLP: fc_1, fc_2, proj, with a Config dataclass."""
from dataclasses import dataclass

import torch
import torch.nn as nn


@dataclass
class Config:
    n_embd: int
    intermediate_size: int
    bias: bool = False


class SwiGLU(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        config = Config(n_embd=d_model, intermediate_size=d_ff)
        self.fc_1 = nn.Linear(config.n_embd, config.intermediate_size, bias=config.bias)
        self.fc_2 = nn.Linear(config.n_embd, config.intermediate_size, bias=config.bias)
        self.proj = nn.Linear(config.intermediate_size, config.n_embd, bias=config.bias)
        self.config = config

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x_fc_1 = self.fc_1(x)
        x_fc_2 = self.fc_2(x)
        x = torch.nn.functional.silu(x_fc_1 * x_fc_2)
        return self.proj(x)
# bug-line: 30
