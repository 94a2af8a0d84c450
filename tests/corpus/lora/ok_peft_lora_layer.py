# attnprep: lora
# expect: passed
"""PEFT's LoraLayer + Linear, reduced to one adapter: base_layer, lora_A / lora_B as ModuleDicts
keyed by the adapter name ("default"), scaling as a dict, dropout as Identity."""

import math

import torch
import torch.nn as nn


class LoRALinear(nn.Module):
    adapter_layer_names = ("lora_A", "lora_B")

    def __init__(self, in_features, out_features, r, alpha, adapter_name="default"):
        super().__init__()
        self.base_layer = nn.Linear(in_features, out_features)
        self.base_layer.weight.requires_grad = False
        self.base_layer.bias.requires_grad = False
        self.r = {adapter_name: r}
        self.lora_alpha = {adapter_name: alpha}
        self.scaling = {adapter_name: alpha / r}
        self.lora_dropout = nn.ModuleDict({adapter_name: nn.Identity()})
        self.lora_A = nn.ModuleDict({adapter_name: nn.Linear(in_features, r, bias=False)})
        self.lora_B = nn.ModuleDict({adapter_name: nn.Linear(r, out_features, bias=False)})
        self.active_adapters = [adapter_name]
        self.reset_lora_parameters(adapter_name)

    def reset_lora_parameters(self, adapter_name):
        nn.init.kaiming_uniform_(self.lora_A[adapter_name].weight, a=math.sqrt(5))
        nn.init.zeros_(self.lora_B[adapter_name].weight)

    def get_delta_weight(self, adapter):
        weight_A = self.lora_A[adapter].weight
        weight_B = self.lora_B[adapter].weight
        return (weight_B @ weight_A) * self.scaling[adapter]

    def forward(self, x: torch.Tensor, *args, **kwargs) -> torch.Tensor:
        result = self.base_layer(x, *args, **kwargs)
        torch_result_dtype = result.dtype
        for active_adapter in self.active_adapters:
            lora_A = self.lora_A[active_adapter]
            lora_B = self.lora_B[active_adapter]
            dropout = self.lora_dropout[active_adapter]
            scaling = self.scaling[active_adapter]
            x = x.to(lora_A.weight.dtype)
            result = result + lora_B(lora_A(dropout(x))) * scaling
        return result.to(torch_result_dtype)

    def merged(self) -> nn.Linear:
        base = self.base_layer
        layer = nn.Linear(base.in_features, base.out_features).to(base.weight.dtype)
        with torch.no_grad():
            delta = sum(self.get_delta_weight(a) for a in self.active_adapters)
            layer.weight.copy_(base.weight + delta)
            layer.bias.copy_(base.bias)
        return layer
