# attnprep: lora
# expect: passed
"""Correct: PEFT's LoraLayer bookkeeping kept small: self.scaling = {"default": alpha / r},
self.active_adapter = "default", lora_A / lora_B as plain Linears (the contract's names), the
update skipped when merged (self.merged False in grading), merged() returning a fresh nn.Linear
from get_delta_weight()."""

import math

import torch
import torch.nn as nn


class LoRALinear(nn.Module):
    def __init__(self, in_features, out_features, r, alpha):
        super().__init__()
        self.base = nn.Linear(in_features, out_features)
        self.base.weight.requires_grad = False
        self.base.bias.requires_grad = False
        self.lora_A = nn.Linear(in_features, r, bias=False)
        self.lora_B = nn.Linear(r, out_features, bias=False)
        nn.init.kaiming_uniform_(self.lora_A.weight, a=math.sqrt(5))
        nn.init.zeros_(self.lora_B.weight)
        self.active_adapter = "default"
        self.scaling = {self.active_adapter: alpha / r}
        self.merged_flag = False

    def get_delta_weight(self, adapter):
        return (self.lora_B.weight @ self.lora_A.weight) * self.scaling[adapter]

    def forward(self, x):
        result = self.base(x)
        if not self.merged_flag:
            result = result + self.lora_B(self.lora_A(x)) * self.scaling[self.active_adapter]
        return result

    @torch.no_grad()
    def merged(self):
        layer = nn.Linear(self.base.in_features, self.base.out_features).to(self.base.weight)
        layer.weight.copy_(self.base.weight + self.get_delta_weight(self.active_adapter))
        layer.bias.copy_(self.base.bias)
        return layer
