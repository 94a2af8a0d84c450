# attnprep: lora
# expect: wrong_output
# diagnosis: lora_merge_no_scale
"""forward right; merged() adds B @ A without alpha / r (PEFT's get_delta_weight without the scaling)."""

import torch
import torch.nn as nn


class LoRALinear(nn.Module):
    def __init__(self, in_features, out_features, r, alpha):
        super().__init__()
        self.base_layer = nn.Linear(in_features, out_features)
        self.base_layer.requires_grad_(False)
        self.lora_A = nn.ModuleDict({"default": nn.Linear(in_features, r, bias=False)})
        self.lora_B = nn.ModuleDict({"default": nn.Linear(r, out_features, bias=False)})
        nn.init.zeros_(self.lora_B["default"].weight)
        self.scaling = {"default": alpha / r}

    def forward(self, x):
        return self.base_layer(x) + self.lora_B["default"](self.lora_A["default"](x)) * self.scaling["default"]

    def get_delta_weight(self, adapter="default"):
        return self.lora_B[adapter].weight @ self.lora_A[adapter].weight

    @torch.no_grad()
    def merged(self):
        m = nn.Linear(self.base_layer.in_features, self.base_layer.out_features)
        m.weight.copy_(self.base_layer.weight + self.get_delta_weight())
        m.bias.copy_(self.base_layer.bias)
        return m
