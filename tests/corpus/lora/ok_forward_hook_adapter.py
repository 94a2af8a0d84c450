# attnprep: lora
# expect: passed
"""Correct: the low-rank update added by a forward hook on the frozen base (as adapter-injection
frameworks do), forward only calling the base; merged() folds scaling · B·A into a fresh Linear on
the base's device and dtype."""

import torch
import torch.nn as nn


class LoRALinear(nn.Module):
    def __init__(self, in_features, out_features, r, alpha):
        super().__init__()
        self.base = nn.Linear(in_features, out_features)
        self.base.requires_grad_(False)
        self.lora_A = nn.Linear(in_features, r, bias=False)
        self.lora_B = nn.Linear(r, out_features, bias=False)
        nn.init.zeros_(self.lora_B.weight)
        self.scaling = alpha / r
        self._hook = self.base.register_forward_hook(lambda mod, args, out: out + self.lora_B(self.lora_A(args[0])) * self.scaling)

    def forward(self, x):
        return self.base(x)

    @torch.no_grad()
    def merged(self):
        w = self.base.weight
        layer = nn.Linear(self.base.in_features, self.base.out_features, device=w.device, dtype=w.dtype)
        layer.weight.copy_(w + self.scaling * self.lora_B.weight @ self.lora_A.weight)
        layer.bias.copy_(self.base.bias)
        return layer
