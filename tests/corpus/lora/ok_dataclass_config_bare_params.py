# attnprep: lora
# expect: passed
"""A dataclass LoraConfig (r, alpha, scaling as a property), the update computed with F.linear on the
sub-layers' weights, merge through addmm: correct."""

from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass(frozen=True)
class LoraConfig:
    r: int
    alpha: float

    @property
    def scaling(self) -> float:
        return self.alpha / self.r


class LoRALinear(nn.Module):
    def __init__(self, in_features, out_features, r, alpha):
        super().__init__()
        self.cfg = LoraConfig(r, alpha)
        self.base = nn.Linear(in_features, out_features).requires_grad_(False)
        self.lora_A = nn.Linear(in_features, r, bias=False)
        self.lora_B = nn.Linear(r, out_features, bias=False)
        self.lora_B.weight.data.zero_()

    def forward(self, x):
        return self.base(x) + F.linear(F.linear(x, self.lora_A.weight), self.lora_B.weight) * self.cfg.scaling

    @torch.no_grad()
    def merged(self):
        layer = nn.Linear(self.base.in_features, self.base.out_features, device=self.base.weight.device,
                          dtype=self.base.weight.dtype)
        layer.weight.copy_(torch.addmm(self.base.weight, self.lora_B.weight, self.lora_A.weight, alpha=self.cfg.scaling))
        layer.bias.copy_(self.base.bias)
        return layer
