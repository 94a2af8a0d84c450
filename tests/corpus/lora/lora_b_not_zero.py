# attnprep: lora
# expect: wrong_output
# diagnosis: lora_b_not_zero
"""lora_B left at nn.Linear's random init: the layer does not start as the base (outputs are right once the grader loads its weights)."""

import torch
import torch.nn as nn


class LoRALinear(nn.Module):
    def __init__(self, in_features, out_features, r, alpha):
        super().__init__()
        self.base = nn.Linear(in_features, out_features)
        self.base.weight.requires_grad_(False)
        self.base.bias.requires_grad_(False)
        self.lora_A = nn.Linear(in_features, r, bias=False)
        self.lora_B = nn.Linear(r, out_features, bias=False)  # random, like lora_A
        self.scaling = alpha / r

    def forward(self, x):
        return self.base(x) + self.scaling * self.lora_B(self.lora_A(x))

    @torch.no_grad()
    def merged(self):
        m = nn.Linear(self.base.in_features, self.base.out_features)
        m.weight.copy_(self.base.weight + self.scaling * (self.lora_B.weight @ self.lora_A.weight))
        m.bias.copy_(self.base.bias)
        return m
# bug-line: 17
