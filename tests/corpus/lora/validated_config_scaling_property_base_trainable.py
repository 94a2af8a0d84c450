# attnprep: lora
# expect: wrong_output
# diagnosis: lora_scale_inverted + lora_base_not_frozen
"""A PEFT-like `LoraConfig` with `__post_init__` validation (r > 0, alpha > 0) and a `scaling`
property on the config, the layer holding the config; `freeze_base` a flag of the config the
constructor reads."""
from dataclasses import dataclass

import torch
import torch.nn as nn


@dataclass
class LoraConfig:
    r: int
    lora_alpha: float
    freeze_base: bool = False

    def __post_init__(self):
        if self.r <= 0 or self.lora_alpha <= 0:
            raise ValueError("r and lora_alpha must be positive")

    @property
    def scaling(self):
        return self.r / self.lora_alpha


class LoRALinear(nn.Module):
    def __init__(self, in_features, out_features, r, alpha):
        super().__init__()
        self.config = LoraConfig(r=r, lora_alpha=alpha)
        self.base = nn.Linear(in_features, out_features)
        if self.config.freeze_base:
            self.base.requires_grad_(False)
        self.lora_A = nn.Linear(in_features, r, bias=False)
        self.lora_B = nn.Linear(r, out_features, bias=False)
        nn.init.zeros_(self.lora_B.weight)

    def forward(self, x):
        return self.base(x) + self.lora_B(self.lora_A(x)) * self.config.scaling

    @torch.no_grad()
    def merged(self):
        layer = nn.Linear(self.base.in_features, self.base.out_features, device=self.base.weight.device, dtype=self.base.weight.dtype)
        layer.weight.copy_(self.base.weight + (self.lora_B.weight @ self.lora_A.weight) * self.config.scaling)
        layer.bias.copy_(self.base.bias)
        return layer
# bug-line: 17, 25
