# attnprep: lora
# expect: passed
"""merged() as PEFT's merge(): the update added into the base's own weight in place, the base
returned (merge_and_unload style); the grader calls it on a copy, so forward is unchanged after.
Kohya-style names lora_down / lora_up."""

import torch
import torch.nn as nn


class LoRALinear(nn.Module):
    def __init__(self, in_features: int, out_features: int, r: int, alpha: float) -> None:
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.linear.weight.requires_grad_(False)
        self.linear.bias.requires_grad_(False)
        self.lora_down = nn.Linear(in_features, r, bias=False)
        self.lora_up = nn.Linear(r, out_features, bias=False)
        nn.init.kaiming_uniform_(self.lora_down.weight, a=5 ** 0.5)
        nn.init.zeros_(self.lora_up.weight)
        self.multiplier = 1.0
        self.scale = alpha / r

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x) + self.lora_up(self.lora_down(x)) * self.multiplier * self.scale

    @torch.no_grad()
    def merged(self) -> nn.Linear:
        self.linear.weight.data += (self.lora_up.weight @ self.lora_down.weight) * self.scale
        return self.linear
