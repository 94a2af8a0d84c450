# attnprep: lora
# expect: passed
"""Correct: forward as one F.linear with base.weight + scaling * B @ A (the gradients still reach A and B); merged() a deepcopy of base with the delta added in place (中文注释)."""
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F


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

    def delta(self):
        return self.scaling * (self.lora_B.weight @ self.lora_A.weight)   # (out, in)

    def forward(self, x):
        # 权重合并后再做一次 F.linear：梯度照样流到 A、B
        return F.linear(x, self.base.weight + self.delta(), self.base.bias)

    def merged(self):
        layer = copy.deepcopy(self.base)
        with torch.no_grad():
            layer.weight += self.delta()
        layer.requires_grad_(True)
        return layer
