# attnprep: lora
# expect: wrong_output
# diagnosis: lora_scale_inverted
"""PEFT-style names, scaling written r / alpha: used by forward and merged() alike."""

import torch
import torch.nn as nn


class LoRALinear(nn.Module):
    def __init__(self, in_features, out_features, r, alpha):
        super().__init__()
        self.base_layer = nn.Linear(in_features, out_features)
        self.base_layer.requires_grad_(False)
        self.lora_A = nn.Linear(in_features, r, bias=False)
        self.lora_B = nn.Linear(r, out_features, bias=False)
        nn.init.zeros_(self.lora_B.weight)
        self.scaling = r / alpha

    def forward(self, x):
        return self.base_layer(x) + self.lora_B(self.lora_A(x)) * self.scaling

    @torch.no_grad()
    def merged(self):
        m = nn.Linear(self.base_layer.in_features, self.base_layer.out_features).to(self.base_layer.weight.dtype)
        m.weight.copy_(self.base_layer.weight + self.scaling * self.lora_B.weight @ self.lora_A.weight)
        m.bias.copy_(self.base_layer.bias)
        return m
