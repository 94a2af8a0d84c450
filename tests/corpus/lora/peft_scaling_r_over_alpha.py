# attnprep: lora
# expect: wrong_output
# diagnosis: lora_scale_inverted
"""PEFT-style LoRA layer with the scaling written r / alpha instead of alpha / r."""

import math

import torch
import torch.nn as nn


class LoRALinear(nn.Module):
    def __init__(self, in_features: int, out_features: int, r: int, alpha: float):
        super().__init__()
        self.base = nn.Linear(in_features, out_features)
        for p in self.base.parameters():
            p.requires_grad = False
        self.lora_A = nn.Linear(in_features, r, bias=False)
        self.lora_B = nn.Linear(r, out_features, bias=False)
        nn.init.kaiming_uniform_(self.lora_A.weight, a=math.sqrt(5))
        nn.init.zeros_(self.lora_B.weight)
        self.r = r
        self.lora_alpha = alpha
        self.scaling = self.r / self.lora_alpha

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        result = self.base(x)
        result = result + self.lora_B(self.lora_A(x)) * self.scaling
        return result

    @torch.no_grad()
    def merged(self) -> nn.Linear:
        out = nn.Linear(self.base.in_features, self.base.out_features).to(self.base.weight)
        out.weight.copy_(self.base.weight + (self.lora_B.weight @ self.lora_A.weight) * self.scaling)
        out.bias.copy_(self.base.bias)
        return out
# bug-line: 24
