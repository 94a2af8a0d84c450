# attnprep: lora
# expect: wrong_output
# diagnosis: lora_alpha_ignored
"""Bare A / B matrices scaled by 1 / r only: alpha never enters."""

import torch
import torch.nn as nn


class LoRALinear(nn.Module):
    def __init__(self, in_features, out_features, r, alpha):
        super().__init__()
        self.r = r
        self.base = nn.Linear(in_features, out_features).requires_grad_(False)
        self.A = nn.Parameter(torch.randn(r, in_features) * 0.01)
        self.B = nn.Parameter(torch.zeros(out_features, r))

    def forward(self, x):
        return self.base(x) + (x @ self.A.T @ self.B.T) / self.r

    def merged(self):
        m = nn.Linear(self.base.in_features, self.base.out_features)
        m.weight.data = (self.base.weight + self.B @ self.A / self.r).detach().clone()
        m.bias.data = self.base.bias.detach().clone()
        return m
# bug-line: 19, 23
