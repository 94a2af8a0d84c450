# attnprep: lora
# expect: passed
"""torchtune's LoRALinear (torchtune/modules/peft/lora.py): weight / bias of the layer itself,
lora_a / lora_b Linear layers, alpha / rank; the base frozen with requires_grad_(False) as
torchtune's set_trainable_params leaves it, and a merged() as its get_merged_lora_ckpt computes."""

import math

import torch
import torch.nn.functional as F
from torch import nn


class LoRALinear(nn.Module):
    def __init__(self, in_dim: int, out_dim: int, rank: int, alpha: float, dropout: float = 0.0, use_bias: bool = True):
        super().__init__()
        self.in_dim = in_dim
        self.out_dim = out_dim
        self.rank = rank
        self.alpha = alpha
        self.use_bias = use_bias
        linear = nn.Linear(in_features=in_dim, out_features=out_dim, bias=self.use_bias)
        weight = linear.weight
        bias = linear.bias if self.use_bias else None
        self.register_parameter("weight", nn.Parameter(weight, requires_grad=False))
        self.register_parameter("bias", nn.Parameter(bias, requires_grad=False) if bias is not None else None)
        self.dropout = nn.Dropout(p=dropout) if dropout > 0.0 else nn.Identity()
        self.lora_a = nn.Linear(in_features=in_dim, out_features=rank, bias=False)
        self.lora_b = nn.Linear(in_features=rank, out_features=out_dim, bias=False)
        self.merged_flag = False
        self.initialize_parameters()

    def initialize_parameters(self):
        _lora_a_init_params(self.lora_a)
        _lora_b_init_params(self.lora_b)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.linear(x, self.weight, self.bias)
        lora_out = self.lora_a(self.dropout(x))
        lora_out = (self.alpha / self.rank) * self.lora_b(lora_out)
        return out + lora_out

    @torch.no_grad()
    def merged(self) -> nn.Linear:
        merged = nn.Linear(self.in_dim, self.out_dim, bias=self.use_bias, dtype=self.weight.dtype)
        merged.weight.copy_(self.weight + (self.alpha / self.rank) * self.lora_b.weight @ self.lora_a.weight)
        if self.use_bias:
            merged.bias.copy_(self.bias)
        return merged


def _lora_a_init_params(x: nn.Linear) -> None:
    nn.init.kaiming_uniform_(x.weight, a=math.sqrt(5))


def _lora_b_init_params(x: nn.Linear) -> None:
    nn.init.zeros_(x.weight)
