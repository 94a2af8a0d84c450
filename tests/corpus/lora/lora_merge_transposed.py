# attnprep: lora
# expect: wrong_output
# diagnosis: lora_merge_transposed
"""merged() adds A.T @ B.T, the transpose of the update: in == out, so nothing raises."""

import torch
import torch.nn as nn


class LoRALinear(nn.Module):
    def __init__(self, in_features, out_features, r, alpha):
        super().__init__()
        self.base = nn.Linear(in_features, out_features)
        self.base.requires_grad_(False)
        self.lora_A = nn.Linear(in_features, r, bias=False)
        self.lora_B = nn.Linear(r, out_features, bias=False)
        nn.init.zeros_(self.lora_B.weight)
        self.scaling = alpha / r

    def forward(self, x):
        return self.base(x) + self.lora_B(self.lora_A(x)) * self.scaling

    @torch.no_grad()
    def merged(self):
        A, B = self.lora_A.weight, self.lora_B.weight  # (r, in), (out, r)
        m = nn.Linear(self.base.in_features, self.base.out_features)
        m.weight.copy_(self.base.weight + self.scaling * (A.T @ B.T))
        m.bias.copy_(self.base.bias)
        return m
# bug-line: 27
