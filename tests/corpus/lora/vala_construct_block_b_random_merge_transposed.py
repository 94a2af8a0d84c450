# attnprep: lora
# expect: wrong_output
# diagnosis: lora_b_not_zero + lora_merge_transposed
"""A Vala / GObject programmer's habits: a `construct` block run after the constructor sets the
initial values, properties with get / set methods, `this`-style explicit self everywhere; the
construct block initialises lora_B like lora_A (random), and the merge multiplies A's and B's
weights the other way round, transposed."""
import math

import torch
import torch.nn as nn


class LoRALinear(nn.Module):
    def __init__(self, in_features, out_features, r, alpha):
        super().__init__()
        self.base = nn.Linear(in_features, out_features)
        self.lora_A = nn.Linear(in_features, r, bias=False)
        self.lora_B = nn.Linear(r, out_features, bias=False)
        self._r = r
        self._alpha = alpha
        self.construct()

    def construct(self):
        self.base.requires_grad_(False)
        nn.init.kaiming_uniform_(self.lora_A.weight, a=math.sqrt(5))
        nn.init.kaiming_uniform_(self.lora_B.weight, a=math.sqrt(5))

    def get_scaling(self):
        return self._alpha / self._r

    def forward(self, x):
        return self.base(x) + self.lora_B(self.lora_A(x)) * self.get_scaling()

    def merged(self):
        out = nn.Linear(self.base.in_features, self.base.out_features)
        with torch.no_grad():
            delta = (self.lora_A.weight.t() @ self.lora_B.weight.t()) * self.get_scaling()
            out.weight.copy_(self.base.weight + delta)
            out.bias.copy_(self.base.bias)
        return out
# bug-line: 27, 38
