# attnprep: lora
# expect: wrong_output
# diagnosis: lora_scale_inverted
"""microsoft/loralib habits: a LoRALayer mixin (r, lora_alpha, lora_dropout, merge_weights,
self.is_merged as its merged flag), reset_parameters with kaiming on A and zeros on B, T(w) for fan_in_fan_out."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class LoRALayer:
    def __init__(self, r, lora_alpha, lora_dropout, merge_weights):
        self.r = r
        self.lora_alpha = lora_alpha
        self.lora_dropout = nn.Dropout(p=lora_dropout) if lora_dropout > 0.0 else (lambda x: x)
        self.is_merged = False
        self.merge_weights = merge_weights


class LoRALinear(nn.Module, LoRALayer):
    def __init__(self, in_features, out_features, r, alpha):
        nn.Module.__init__(self)
        LoRALayer.__init__(self, r=r, lora_alpha=alpha, lora_dropout=0.0, merge_weights=False)
        self.fan_in_fan_out = False
        self.base = nn.Linear(in_features, out_features)
        self.lora_A = nn.Linear(in_features, r, bias=False)
        self.lora_B = nn.Linear(r, out_features, bias=False)
        self.scaling = self.r / self.lora_alpha
        self.base.weight.requires_grad = False
        self.base.bias.requires_grad = False
        self.reset_parameters()

    def reset_parameters(self):
        nn.init.kaiming_uniform_(self.lora_A.weight, a=math.sqrt(5))
        nn.init.zeros_(self.lora_B.weight)

    def T(self, w):
        return w.transpose(0, 1) if self.fan_in_fan_out else w

    def delta_weight(self):
        return self.T(self.lora_B.weight @ self.lora_A.weight) * self.scaling

    def forward(self, x):
        result = F.linear(x, self.T(self.base.weight), bias=self.base.bias)
        if self.r > 0 and not self.is_merged:
            result = result + self.lora_B(self.lora_A(self.lora_dropout(x))) * self.scaling
        return result

    def merged(self):
        out = nn.Linear(self.base.in_features, self.base.out_features)
        with torch.no_grad():
            out.weight.copy_(self.base.weight + self.delta_weight())
            out.bias.copy_(self.base.bias)
        return out
# bug-line: 30
