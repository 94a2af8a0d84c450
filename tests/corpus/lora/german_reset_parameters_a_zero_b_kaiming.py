# attnprep: lora
# expect: wrong_output
# diagnosis: lora_b_not_zero
"""German comments; a reset_parameters() override called from __init__ (as PEFT's update_layer does),
the scale kept as self.scaling."""
import math

import torch
import torch.nn as nn


class LoRALinear(nn.Module):
    def __init__(self, in_features, out_features, r, alpha):
        super().__init__()
        self.base = nn.Linear(in_features, out_features)
        for p in self.base.parameters():
            p.requires_grad = False  # Basisgewichte eingefroren
        self.lora_A = nn.Linear(in_features, r, bias=False)
        self.lora_B = nn.Linear(r, out_features, bias=False)
        self.scaling = alpha / r
        self.reset_parameters()

    def reset_parameters(self):
        # eine Matrix zufällig, die andere null: die Schicht startet als base
        nn.init.kaiming_uniform_(self.lora_B.weight, a=math.sqrt(5))
        nn.init.zeros_(self.lora_A.weight)

    def forward(self, x):
        return self.base(x) + self.lora_B(self.lora_A(x)) * self.scaling

    def merged(self):
        out = nn.Linear(self.base.in_features, self.base.out_features)
        with torch.no_grad():
            out.weight.copy_(self.base.weight + self.scaling * self.lora_B.weight @ self.lora_A.weight)
            out.bias.copy_(self.base.bias)
        return out
# bug-line: 25, 26
