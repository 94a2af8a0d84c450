# attnprep: lora
# expect: wrong_output
# diagnosis: lora_alpha_ignored
"""PEFT-free LoRA with the adapter weights in an nn.ParameterDict keyed by adapter name ("default"),
as PEFT's lora_A / lora_B ModuleDicts are, the base frozen with requires_grad_(False), merged()
built with torch.addmm. The update is added as B·A·x without alpha / r, in forward and in merged()."""

import torch
import torch.nn as nn


class LoRALinear(nn.Module):
    def __init__(self, in_features, out_features, r, alpha):
        super().__init__()
        self.base = nn.Linear(in_features, out_features)
        self.base.requires_grad_(False)
        self.lora_A = nn.ModuleDict({"default": nn.Linear(in_features, r, bias=False)})
        self.lora_B = nn.ModuleDict({"default": nn.Linear(r, out_features, bias=False)})
        nn.init.zeros_(self.lora_B["default"].weight)
        self.scaling = {"default": 1.0}
        self.r, self.alpha = r, alpha

    def forward(self, x):
        a, b = self.lora_A["default"], self.lora_B["default"]
        return self.base(x) + b(a(x)) * self.scaling["default"]

    @torch.no_grad()
    def merged(self):
        a, b = self.lora_A["default"].weight, self.lora_B["default"].weight
        layer = nn.Linear(self.base.in_features, self.base.out_features).to(self.base.weight)
        layer.weight.copy_(torch.addmm(self.base.weight, b, a, alpha=self.scaling["default"]))
        layer.bias.copy_(self.base.bias)
        return layer
# bug-line: 20
