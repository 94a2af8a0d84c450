# attnprep: lora
# expect: passed
"""Correct, QLoRA-flavoured: the frozen base layer kept in bfloat16 (cast to the input's dtype at
use), the adapters in float32; merged() returns a float32 nn.Linear of W + scaling * B A."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class LoRALinear(nn.Module):
    def __init__(self, in_features, out_features, r, alpha):
        super().__init__()
        self.base = nn.Linear(in_features, out_features, dtype=torch.bfloat16)
        self.base.requires_grad_(False)
        self.lora_A = nn.Linear(in_features, r, bias=False)
        self.lora_B = nn.Linear(r, out_features, bias=False)
        nn.init.kaiming_uniform_(self.lora_A.weight, a=math.sqrt(5))
        nn.init.zeros_(self.lora_B.weight)
        self.scaling = alpha / r

    def forward(self, x):
        base = F.linear(x, self.base.weight.to(x.dtype), self.base.bias.to(x.dtype))
        return base + self.lora_B(self.lora_A(x)) * self.scaling

    @torch.no_grad()
    def merged(self):
        out = nn.Linear(self.base.in_features, self.base.out_features, device=self.lora_A.weight.device)
        out.weight.copy_(self.base.weight.float() + self.scaling * self.lora_B.weight @ self.lora_A.weight)
        out.bias.copy_(self.base.bias.float())
        return out
