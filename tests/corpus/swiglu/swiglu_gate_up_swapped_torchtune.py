# attnprep: swiglu
# expect: wrong_output
# diagnosis: swiglu_gate_up_swapped
"""torchtune-style FeedForward nested in the contract's class, built with gate and up swapped:
w1 gets the up projection's job, the activation runs on w3 (mapped by name through self.ffn)."""

import torch
from torch import nn


class FeedForward(nn.Module):
    def __init__(self, dim: int, hidden_dim: int) -> None:
        super().__init__()
        self.w1 = nn.Linear(dim, hidden_dim, bias=False)
        self.w2 = nn.Linear(hidden_dim, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden_dim, bias=False)
        self.activation = nn.SiLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(self.w1(x) * self.activation(self.w3(x)))


class SwiGLU(nn.Module):
    def __init__(self, d_model: int, d_ff: int) -> None:
        super().__init__()
        self.ffn = FeedForward(d_model, d_ff)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ffn(x)
# bug-line: 20
