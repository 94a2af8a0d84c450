# attnprep: lora
# expect: passed
"""operator.methodcaller and operator.attrgetter-free calls: the freezing, the zeroing and the
merge done by methodcaller objects kept in a small table (`requires_grad_(False)`, `zero_()`,
`t()`), applied with map over the parameters they concern."""
import operator

import torch
import torch.nn as nn

FREEZE = operator.methodcaller("requires_grad_", False)
ZERO = operator.methodcaller("zero_")
TRANSPOSE = operator.methodcaller("t")


class LoRALinear(nn.Module):
    def __init__(self, in_features, out_features, r, alpha):
        super().__init__()
        self.scaling = alpha / r
        self.base = nn.Linear(in_features, out_features)
        self.lora_A = nn.Linear(in_features, r, bias=False)
        self.lora_B = nn.Linear(r, out_features, bias=False)
        list(map(FREEZE, self.base.parameters()))
        with torch.no_grad():
            ZERO(self.lora_B.weight)

    def forward(self, x):
        low = x @ TRANSPOSE(self.lora_A.weight)  # (..., r)
        return self.base(x) + (low @ TRANSPOSE(self.lora_B.weight)) * self.scaling

    def merged(self):
        out_f, in_f = self.base.weight.shape
        layer = nn.Linear(in_f, out_f)
        delta = operator.matmul(self.lora_B.weight, self.lora_A.weight) * self.scaling
        with torch.no_grad():
            layer.weight.copy_(operator.add(self.base.weight, delta))
            layer.bias.copy_(self.base.bias)
        return layer
