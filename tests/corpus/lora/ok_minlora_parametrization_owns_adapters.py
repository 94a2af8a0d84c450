# attnprep: lora
# expect: passed
"""Correct: cccntu/minLoRA as it is written: the adapters are nn.Parameters of the parametrization
itself (LoRAParametrization(fan_in, fan_out, rank, lora_alpha) with lora_A (r, in) random and lora_B
(out, r) zero, `X + torch.matmul(self.lora_B, self.lora_A).view(X.shape) * self.scaling`), registered
on base.weight with torch.nn.utils.parametrize by an `add_lora`-like helper; the layer holds only
base, and merged() copies the parametrized weight (minLoRA's merge_lora without removing it)."""

import math

import torch
import torch.nn.utils.parametrize as parametrize
from torch import nn


class LoRAParametrization(nn.Module):
    def __init__(self, fan_in, fan_out, rank=4, lora_alpha=1):
        super().__init__()
        self.lora_A = nn.Parameter(torch.zeros(rank, fan_in))
        self.lora_B = nn.Parameter(torch.zeros(fan_out, rank))
        nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))
        self.scaling = lora_alpha / rank

    def forward(self, X):
        return X + torch.matmul(self.lora_B, self.lora_A).view(X.shape) * self.scaling


def add_lora(layer, rank, lora_alpha):
    fan_out, fan_in = layer.weight.shape
    parametrize.register_parametrization(layer, "weight", LoRAParametrization(fan_in, fan_out, rank, lora_alpha))
    layer.parametrizations.weight.original.requires_grad_(False)
    layer.bias.requires_grad_(False)
    return layer


class LoRALinear(nn.Module):
    def __init__(self, in_features, out_features, r, alpha):
        super().__init__()
        self.base = add_lora(nn.Linear(in_features, out_features), r, alpha)

    def forward(self, x):
        return self.base(x)

    @torch.no_grad()
    def merged(self):
        w = self.base.weight
        out = nn.Linear(w.shape[1], w.shape[0], device=w.device, dtype=w.dtype)
        out.weight.copy_(w)
        out.bias.copy_(self.base.bias)
        return out
