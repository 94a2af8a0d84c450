# attnprep: lora
# expect: wrong_output
# diagnosis: lora_merge_no_scale
"""The adapter added by a forward hook, as some training frameworks inject adapters: `base` is a
plain frozen nn.Linear, `register_forward_hook(self._add_delta)` adds the scaled low-rank update to
its output, and forward only calls `self.base(x)`. The hook scales by alpha / r; merged() folds
B·A into the weight without the scale."""

import torch
import torch.nn as nn


class LoRALinear(nn.Module):
    def __init__(self, in_features, out_features, r, alpha):
        super().__init__()
        self.base = nn.Linear(in_features, out_features)
        self.base.weight.requires_grad_(False)
        self.base.bias.requires_grad_(False)
        self.lora_A = nn.Linear(in_features, r, bias=False)
        self.lora_B = nn.Linear(r, out_features, bias=False)
        nn.init.zeros_(self.lora_B.weight)
        self.scaling = alpha / r
        self.base.register_forward_hook(self._add_delta)

    def _add_delta(self, module, inputs, output):
        (x,) = inputs
        return output + self.lora_B(self.lora_A(x)) * self.scaling

    def forward(self, x):
        return self.base(x)

    @torch.no_grad()
    def merged(self):
        plain = nn.Linear(self.base.in_features, self.base.out_features)
        plain.weight.copy_(self.base.weight + self.lora_B.weight @ self.lora_A.weight)
        plain.bias.copy_(self.base.bias)
        return plain
# bug-line: 35
