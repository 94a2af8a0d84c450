# attnprep: lora
# expect: wrong_output
# diagnosis: lora_alpha_ignored
"""LoRA through torch.func.functional_call: the frozen base runs as a stateless call on its own
parameters (detached), the adapter's delta W = B @ A is applied with F.linear, and merged() folds it."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call


class LoRALinear(nn.Module):
    def __init__(self, in_features, out_features, r, alpha):
        super().__init__()
        self.r, self.alpha = r, alpha
        self.base = nn.Linear(in_features, out_features)
        for p in self.base.parameters():
            p.requires_grad = False
        self.lora_A = nn.Linear(in_features, r, bias=False)
        self.lora_B = nn.Linear(r, out_features, bias=False)
        nn.init.kaiming_uniform_(self.lora_A.weight, a=math.sqrt(5))
        nn.init.zeros_(self.lora_B.weight)
        self.scaling = 1.0 / r

    def delta_weight(self):
        return self.lora_B.weight @ self.lora_A.weight * self.scaling  # (out, in)

    def forward(self, x):
        frozen = {name: p.detach() for name, p in self.base.named_parameters()}
        y = functional_call(self.base, frozen, (x,))
        return y + F.linear(x, self.delta_weight())

    @torch.no_grad()
    def merged(self):
        layer = nn.Linear(self.base.in_features, self.base.out_features,
                          device=self.base.weight.device, dtype=self.base.weight.dtype)
        layer.weight.copy_(self.base.weight + self.delta_weight())
        layer.bias.copy_(self.base.bias)
        return layer
# bug-line: 25
