# attnprep: lora
# expect: wrong_output
# diagnosis: lora_scale_inverted + lora_base_not_frozen
"""typing.Protocol for adapters (`class Adapter(Protocol): def delta(self, x) -> Tensor`), a
`@dataclass`-like `LoraConfig(r, alpha)` with a `scaling` property, and the layer composing a base
with an adapter. Two slips: the config's scaling is r / alpha, and the base layer's freeze was left
to a `freeze_base()` method nobody calls (its weight and bias keep requires_grad=True)."""

from dataclasses import dataclass
from typing import Protocol

import torch
import torch.nn as nn


class Adapter(Protocol):
    def delta(self, x: torch.Tensor) -> torch.Tensor: ...


@dataclass(frozen=True)
class LoraConfig:
    r: int
    alpha: float

    @property
    def scaling(self) -> float:
        return self.r / self.alpha


class LoRALinear(nn.Module):
    def __init__(self, in_features, out_features, r, alpha):
        super().__init__()
        self.config = LoraConfig(r, alpha)
        self.base = nn.Linear(in_features, out_features)
        self.lora_A = nn.Linear(in_features, r, bias=False)
        self.lora_B = nn.Linear(r, out_features, bias=False)
        nn.init.zeros_(self.lora_B.weight)

    def freeze_base(self):
        self.base.requires_grad_(False)

    def delta(self, x):
        return self.lora_B(self.lora_A(x)) * self.config.scaling

    def forward(self, x):
        return self.base(x) + self.delta(x)

    @torch.no_grad()
    def merged(self):
        layer = nn.Linear(self.base.in_features, self.base.out_features)
        layer.weight.copy_(self.base.weight + self.config.scaling * (self.lora_B.weight @ self.lora_A.weight))
        layer.bias.copy_(self.base.bias)
        return layer
# bug-line: 27, 34
