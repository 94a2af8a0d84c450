# attnprep: lora
# expect: wrong_output
# diagnosis: lora_scale_inverted + lora_merge_transposed
"""PEFT-like names; scaling = r / alpha (inverted), and merged() adds (A^T B^T) where B·A belongs:
with in == out the shapes fit and the numbers are transposed."""

import torch
import torch.nn as nn


class LoRALinear(nn.Module):
    def __init__(self, in_features, out_features, r, alpha):
        super().__init__()
        self.base = nn.Linear(in_features, out_features)
        for p in self.base.parameters():
            p.requires_grad = False
        self.lora_A = nn.Linear(in_features, r, bias=False)
        self.lora_B = nn.Linear(r, out_features, bias=False)
        nn.init.zeros_(self.lora_B.weight)
        self.scaling = r / alpha

    def forward(self, x):
        return self.base(x) + self.lora_B(self.lora_A(x)) * self.scaling

    @torch.no_grad()
    def merged(self):
        m = nn.Linear(self.base.in_features, self.base.out_features).to(self.base.weight)
        m.weight.copy_(self.base.weight + self.scaling * (self.lora_A.weight.T @ self.lora_B.weight.T))
        m.bias.copy_(self.base.bias)
        return m
