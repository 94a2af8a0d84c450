# attnprep: swiglu
# expect: wrong_output
# diagnosis: swiglu_relu
"""torchtune-like component builders: a frozen dataclass config with a string field naming the
activation, a module-level table of plain activation functions, FeedForward(gate_proj, down_proj,
up_proj, activation) built by a builder function, and SwiGLU as a thin wrapper over it."""
from dataclasses import dataclass
from typing import Callable

import torch
from torch import nn


def silu(x: torch.Tensor) -> torch.Tensor:
    return x * torch.sigmoid(x)


def relu(x: torch.Tensor) -> torch.Tensor:
    return torch.clamp(x, min=0.0)


_ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {"silu": silu, "relu": relu}


@dataclass(frozen=True)
class MLPConfig:
    bias: bool = False
    hidden_act: str = "relu"


class FeedForward(nn.Module):
    def __init__(self, *, gate_proj: nn.Module, down_proj: nn.Module, up_proj: nn.Module, activation):
        super().__init__()
        self.w1, self.w2, self.w3, self.activation = gate_proj, down_proj, up_proj, activation

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(self.activation(self.w1(x)) * self.w3(x))


def llama_mlp(dim: int, hidden_dim: int, cfg: MLPConfig = MLPConfig()) -> FeedForward:
    return FeedForward(gate_proj=nn.Linear(dim, hidden_dim, bias=cfg.bias),
                       down_proj=nn.Linear(hidden_dim, dim, bias=cfg.bias),
                       up_proj=nn.Linear(dim, hidden_dim, bias=cfg.bias),
                       activation=_ACTIVATIONS[cfg.hidden_act])


class SwiGLU(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.mlp = llama_mlp(d_model, d_ff)

    def forward(self, x):
        return self.mlp(x)
# bug-line: 28
