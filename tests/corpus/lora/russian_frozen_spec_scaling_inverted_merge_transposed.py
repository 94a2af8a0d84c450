# attnprep: lora
# expect: wrong_output
# diagnosis: lora_scale_inverted + lora_merge_transposed
"""A frozen dataclass LoraSpec (r, alpha) with a scaling property, Russian comments, merged() building
a fresh nn.Linear under torch.no_grad()."""
from dataclasses import dataclass

import torch
import torch.nn as nn


@dataclass(frozen=True)
class LoraSpec:
    r: int
    alpha: float

    @property
    def scaling(self):
        # коэффициент масштабирования дельты
        return self.r / self.alpha


class LoRALinear(nn.Module):
    def __init__(self, in_features, out_features, r, alpha):
        super().__init__()
        self.spec = LoraSpec(r, alpha)
        self.base = nn.Linear(in_features, out_features)
        self.base.requires_grad_(False)  # базовый слой заморожен
        self.lora_A = nn.Linear(in_features, r, bias=False)
        self.lora_B = nn.Linear(r, out_features, bias=False)
        nn.init.zeros_(self.lora_B.weight)

    def forward(self, x):
        return self.base(x) + self.lora_B(self.lora_A(x)) * self.spec.scaling

    def merged(self):
        lin = nn.Linear(self.base.in_features, self.base.out_features)
        with torch.no_grad():
            delta = (self.lora_A.weight.T @ self.lora_B.weight.T) * self.spec.scaling
            lin.weight.copy_(self.base.weight + delta)
            lin.bias.copy_(self.base.bias)
        return lin
# bug-line: 20, 39
