# attnprep: lora
# expect: passed
"""An operator-overloaded low-rank factor: LowRank(A, B, scale) supports `x @ lr` (the adapter's
path) and `lr.dense()` (B·A·scale), so forward and merged() read the same object."""
import torch
import torch.nn as nn


class LowRank:
    def __init__(self, A: nn.Linear, B: nn.Linear, scale: float):
        self.A, self.B, self.scale = A, B, scale

    def __rmatmul__(self, x):
        return self.B(self.A(x)) * self.scale

    def dense(self):
        return (self.B.weight @ self.A.weight) * self.scale       # (out, in)


class LoRALinear(nn.Module):
    def __init__(self, in_features, out_features, r, alpha):
        super().__init__()
        self.base = nn.Linear(in_features, out_features)
        self.base.requires_grad_(False)
        self.lora_A = nn.Linear(in_features, r, bias=False)
        self.lora_B = nn.Linear(r, out_features, bias=False)
        nn.init.zeros_(self.lora_B.weight)
        self.alpha, self.r = alpha, r

    @property
    def delta(self):
        return LowRank(self.lora_A, self.lora_B, self.alpha / self.r)

    def forward(self, x):
        return self.base(x) + x @ self.delta

    def merged(self):
        lin = nn.Linear(self.base.in_features, self.base.out_features)
        with torch.no_grad():
            lin.weight.copy_(self.base.weight + self.delta.dense())
            lin.bias.copy_(self.base.bias)
        return lin
