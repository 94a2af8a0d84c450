# attnprep: lora
# expect: passed
"""Correct: PEFT's LoraLayer shape: adapters in ModuleDicts under 'default', scaling dict, Identity dropout, base_layer frozen, merged() under @torch.no_grad()."""
import math

import torch
import torch.nn as nn


class LoRALinear(nn.Module):
    """PEFT's LoraLayer shape of things: adapters in ModuleDicts under the "default" adapter name."""

    def __init__(self, in_features, out_features, r, alpha):
        super().__init__()
        self.base_layer = nn.Linear(in_features, out_features)
        for p in self.base_layer.parameters():
            p.requires_grad = False
        self.active_adapter = "default"
        self.r = {"default": r}
        self.lora_alpha = {"default": alpha}
        self.scaling = {"default": alpha / r}
        self.lora_dropout = nn.ModuleDict({"default": nn.Identity()})
        self.lora_A = nn.ModuleDict({"default": nn.Linear(in_features, r, bias=False)})
        self.lora_B = nn.ModuleDict({"default": nn.Linear(r, out_features, bias=False)})
        nn.init.kaiming_uniform_(self.lora_A["default"].weight, a=math.sqrt(5))
        nn.init.zeros_(self.lora_B["default"].weight)

    def forward(self, x):
        result = self.base_layer(x)
        name = self.active_adapter
        lora_A, lora_B = self.lora_A[name], self.lora_B[name]
        dropout, scaling = self.lora_dropout[name], self.scaling[name]
        x = x.to(lora_A.weight.dtype)
        return result + lora_B(lora_A(dropout(x))) * scaling

    def get_delta_weight(self, adapter):
        return (self.lora_B[adapter].weight @ self.lora_A[adapter].weight) * self.scaling[adapter]

    @torch.no_grad()
    def merged(self):
        layer = nn.Linear(self.base_layer.in_features, self.base_layer.out_features,
                          device=self.base_layer.weight.device, dtype=self.base_layer.weight.dtype)
        layer.weight.copy_(self.base_layer.weight + self.get_delta_weight(self.active_adapter))
        layer.bias.copy_(self.base_layer.bias)
        return layer
