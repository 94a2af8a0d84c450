# attnprep: lora
# expect: wrong_output
# diagnosis: lora_alpha_ignored + lora_base_not_frozen
"""Neither scaled nor frozen: an output mistake and a gradient one, each named."""

import torch
import torch.nn as nn


class LoRALinear(nn.Module):
    def __init__(self, in_features, out_features, r, alpha):
        super().__init__()
        self.base = nn.Linear(in_features, out_features)
        self.lora_A = nn.Linear(in_features, r, bias=False)
        self.lora_B = nn.Linear(r, out_features, bias=False)
        nn.init.zeros_(self.lora_B.weight)

    def forward(self, x):
        return self.base(x) + self.lora_B(self.lora_A(x))

    @torch.no_grad()
    def merged(self):
        m = nn.Linear(self.base.in_features, self.base.out_features)
        m.weight.copy_(self.base.weight + self.lora_B.weight @ self.lora_A.weight)
        m.bias.copy_(self.base.bias)
        return m
