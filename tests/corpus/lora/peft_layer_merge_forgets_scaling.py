# attnprep: lora
# expect: wrong_output
# diagnosis: lora_merge_no_scale
"""PEFT's LoraLayer habits: lora_A / lora_B held in ModuleDicts keyed by adapter name, scaling a dict, get_delta_weight()."""
import math

import torch
import torch.nn as nn


class LoRALinear(nn.Module):
    adapter_name = "default"

    def __init__(self, in_features, out_features, r, alpha):
        super().__init__()
        self.base = nn.Linear(in_features, out_features)
        for p in self.base.parameters():
            p.requires_grad = False
        self.r = {self.adapter_name: r}
        self.lora_alpha = {self.adapter_name: alpha}
        self.scaling = {self.adapter_name: alpha / r}
        self.lora_A = nn.ModuleDict({self.adapter_name: nn.Linear(in_features, r, bias=False)})
        self.lora_B = nn.ModuleDict({self.adapter_name: nn.Linear(r, out_features, bias=False)})
        nn.init.kaiming_uniform_(self.lora_A[self.adapter_name].weight, a=math.sqrt(5))
        nn.init.zeros_(self.lora_B[self.adapter_name].weight)

    def get_delta_weight(self, adapter):
        return self.lora_B[adapter].weight @ self.lora_A[adapter].weight

    def forward(self, x):
        result = self.base(x)
        for active_adapter in self.lora_A.keys():
            lora_A = self.lora_A[active_adapter]
            lora_B = self.lora_B[active_adapter]
            result = result + lora_B(lora_A(x)) * self.scaling[active_adapter]
        return result

    @torch.no_grad()
    def merged(self):
        new = nn.Linear(self.base.in_features, self.base.out_features).to(self.base.weight.device, self.base.weight.dtype)
        new.weight.copy_(self.base.weight + self.get_delta_weight(self.adapter_name))
        new.bias.copy_(self.base.bias)
        return new
# bug-line: 28
