# attnprep: lora
# expect: wrong_output
"""merged() returns a deep copy of the LoRA module itself with the adapters folded in: its output is
right, but it is not the plain nn.Linear the contract asks for."""

import copy

import torch
import torch.nn as nn


class LoRALinear(nn.Module):
    def __init__(self, in_features, out_features, r, alpha):
        super().__init__()
        self.base = nn.Linear(in_features, out_features).requires_grad_(False)
        self.lora_A = nn.Linear(in_features, r, bias=False)
        self.lora_B = nn.Linear(r, out_features, bias=False)
        nn.init.zeros_(self.lora_B.weight)
        self.scaling = alpha / r

    def forward(self, x):
        return self.base(x) + self.lora_B(self.lora_A(x)) * self.scaling

    @torch.no_grad()
    def merged(self):
        m = copy.deepcopy(self)
        m.base.weight += self.scaling * (self.lora_B.weight @ self.lora_A.weight)
        m.lora_B.weight.zero_()
        return m
