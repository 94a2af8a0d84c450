# attnprep: lora
# expect: wrong_output
# diagnosis: lora_merge_no_scale
"""A LoraConfig dataclass with field(default_factory=...) for its list of target modules and its
init options, handed to the layer (PEFT's LoraConfig, trimmed); merged() folds the update in without
the scale."""
from dataclasses import dataclass, field

import torch
import torch.nn as nn


@dataclass
class LoraConfig:
    r: int = 8
    lora_alpha: float = 16.0
    target_modules: list = field(default_factory=lambda: ["q_proj", "v_proj"])
    init: dict = field(default_factory=lambda: {"A": "kaiming_uniform", "B": "zeros"})

    @property
    def scaling(self):
        return self.lora_alpha / self.r


class LoRALinear(nn.Module):
    def __init__(self, in_features, out_features, r, alpha):
        super().__init__()
        self.config = LoraConfig(r=r, lora_alpha=alpha)
        self.base = nn.Linear(in_features, out_features)
        for p in self.base.parameters():
            p.requires_grad = False
        self.lora_A = nn.Linear(in_features, r, bias=False)
        self.lora_B = nn.Linear(r, out_features, bias=False)
        if self.config.init["B"] == "zeros":
            nn.init.zeros_(self.lora_B.weight)

    def forward(self, x):
        return self.base(x) + self.lora_B(self.lora_A(x)) * self.config.scaling

    @torch.no_grad()
    def merged(self):
        fused = nn.Linear(self.base.in_features, self.base.out_features).to(self.base.weight)
        fused.weight.copy_(self.base.weight + self.lora_B.weight @ self.lora_A.weight)
        fused.bias.copy_(self.base.bias)
        return fused
# bug-line: 43
