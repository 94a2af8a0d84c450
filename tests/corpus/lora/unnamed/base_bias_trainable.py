# attnprep: lora
# expect: wrong_output
"""Only the base's weight frozen: base.bias still trains. Not frozen, so it fails; not the named
mistake (the weight, the bulk of the layer, is frozen), so nothing is named."""

import torch
import torch.nn as nn


class LoRALinear(nn.Module):
    def __init__(self, in_features, out_features, r, alpha):
        super().__init__()
        self.base = nn.Linear(in_features, out_features)
        self.base.weight.requires_grad = False  # the bias forgotten
        self.lora_A = nn.Linear(in_features, r, bias=False)
        self.lora_B = nn.Linear(r, out_features, bias=False)
        nn.init.zeros_(self.lora_B.weight)
        self.scaling = alpha / r

    def forward(self, x):
        return self.base(x) + self.lora_B(self.lora_A(x)) * self.scaling

    @torch.no_grad()
    def merged(self):
        m = nn.Linear(self.base.in_features, self.base.out_features)
        m.weight.copy_(self.base.weight + self.scaling * (self.lora_B.weight @ self.lora_A.weight))
        m.bias.copy_(self.base.bias)
        return m
