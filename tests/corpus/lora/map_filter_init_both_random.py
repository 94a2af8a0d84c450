# attnprep: lora
# expect: wrong_output
# diagnosis: lora_b_not_zero
"""map / filter over named parameters: the freeze done by `list(map(lambda p: p.requires_grad_(False),
filter(..., self.base.parameters())))`, both adapters initialised by one `map(init, (A, B))` with
kaiming_uniform_: lora_B is random at construction, so the layer does not start as its base."""

import math

import torch
import torch.nn as nn


class LoRALinear(nn.Module):
    def __init__(self, in_features, out_features, r, alpha):
        super().__init__()
        self.base = nn.Linear(in_features, out_features)
        list(map(lambda p: p.requires_grad_(False), filter(lambda p: p.requires_grad, self.base.parameters())))
        self.lora_A = nn.Linear(in_features, r, bias=False)
        self.lora_B = nn.Linear(r, out_features, bias=False)
        list(map(lambda m: nn.init.kaiming_uniform_(m.weight, a=math.sqrt(5)), (self.lora_A, self.lora_B)))
        self.scaling = alpha / r

    def forward(self, x):
        return self.base(x) + self.lora_B(self.lora_A(x)) * self.scaling

    @torch.no_grad()
    def merged(self):
        out = nn.Linear(self.base.in_features, self.base.out_features)
        out.weight.copy_(self.base.weight + self.scaling * self.lora_B.weight @ self.lora_A.weight)
        out.bias.copy_(self.base.bias)
        return out
# bug-line: 21
