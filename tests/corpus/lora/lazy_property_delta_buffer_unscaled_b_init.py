# attnprep: lora
# expect: wrong_output
# diagnosis: lora_merge_no_scale + lora_b_not_zero
"""Property-based lazy values: the low-rank delta B·A is a property computed on first use and kept in
a private attribute (cleared when the adapter is re-initialised), the scaling a read-only property;
both adapter matrices initialised by one reset_parameters loop."""
import math

import torch
import torch.nn as nn


class LoRALinear(nn.Module):
    def __init__(self, in_features, out_features, r, alpha):
        super().__init__()
        self.r, self.alpha = r, alpha
        self.base = nn.Linear(in_features, out_features)
        for p in self.base.parameters():
            p.requires_grad = False
        self.lora_A = nn.Linear(in_features, r, bias=False)
        self.lora_B = nn.Linear(r, out_features, bias=False)
        self._delta = None
        self.reset_parameters()

    def reset_parameters(self):
        nn.init.kaiming_uniform_(self.lora_A.weight, a=math.sqrt(5))
        nn.init.kaiming_uniform_(self.lora_B.weight, a=math.sqrt(5))
        self._delta = None

    @property
    def scaling(self):
        return self.alpha / self.r

    @property
    def delta(self):
        if self._delta is None:
            self._delta = self.lora_B.weight @ self.lora_A.weight  # (out, in)
        return self._delta

    def forward(self, x):
        return self.base(x) + self.lora_B(self.lora_A(x)) * self.scaling

    @torch.no_grad()
    def merged(self):
        self._delta = None
        lin = nn.Linear(self.base.in_features, self.base.out_features)
        lin.weight.copy_(self.base.weight + self.delta)
        lin.bias.copy_(self.base.bias)
        return lin
# bug-line: 27, 47
