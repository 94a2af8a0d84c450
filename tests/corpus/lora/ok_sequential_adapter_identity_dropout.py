# attnprep: lora
# expect: passed
"""Correct: the adapter as nn.Sequential(lora_A, nn.Identity() dropout placeholder, lora_B) registered under
`adapter`, scaling as a property, merged() via copy.deepcopy of base and an in-place add under no_grad."""
import copy

import torch
import torch.nn as nn


class LoRALinear(nn.Module):
    def __init__(self, in_features, out_features, r, alpha):
        super().__init__()
        self.r, self.alpha = r, alpha
        self.base = nn.Linear(in_features, out_features)
        for p in self.base.parameters():
            p.requires_grad = False
        self.adapter = nn.Sequential()
        self.adapter.add_module("lora_A", nn.Linear(in_features, r, bias=False))
        self.adapter.add_module("dropout", nn.Identity())
        self.adapter.add_module("lora_B", nn.Linear(r, out_features, bias=False))
        nn.init.zeros_(self.adapter.lora_B.weight)

    @property
    def scaling(self):
        return self.alpha / self.r

    def forward(self, x):
        return self.base(x) + self.adapter(x) * self.scaling

    def merged(self):
        layer = copy.deepcopy(self.base)
        with torch.no_grad():
            layer.weight += self.scaling * (self.adapter.lora_B.weight @ self.adapter.lora_A.weight)
        return layer
