# attnprep: lora
# expect: wrong_output
# diagnosis: lora_b_not_zero + lora_alpha_ignored
"""Ελληνικά σχόλια (Greek comments), operator.attrgetter to reach the layers' weights
("lora_B.weight"), the update kept as a property; lora_B left at its random init, and the update
added without the alpha / r scale."""
import operator

import torch
import torch.nn as nn

βάρος_B = operator.attrgetter("lora_B.weight")
βάρος_A = operator.attrgetter("lora_A.weight")


class LoRALinear(nn.Module):
    def __init__(self, in_features, out_features, r, alpha):
        super().__init__()
        self.r, self.alpha = r, alpha  # βαθμός και κλίμακα
        self.base = nn.Linear(in_features, out_features)  # παγωμένο
        self.base.weight.requires_grad_(False)
        self.base.bias.requires_grad_(False)
        self.lora_A = nn.Linear(in_features, r, bias=False)
        self.lora_B = nn.Linear(r, out_features, bias=False)  # αρχικοποίηση του nn.Linear

    @property
    def delta(self):  # ΔW = B·A, (out, in)
        return βάρος_B(self) @ βάρος_A(self)

    def forward(self, x):
        return self.base(x) + self.lora_B(self.lora_A(x))

    @torch.no_grad()
    def merged(self):
        out = nn.Linear(self.base.in_features, self.base.out_features)
        out.to(self.base.weight.device, self.base.weight.dtype)
        out.weight.copy_(self.base.weight + self.delta * (self.alpha / self.r))
        out.bias.copy_(self.base.bias)
        return out
# bug-line: 24, 31
