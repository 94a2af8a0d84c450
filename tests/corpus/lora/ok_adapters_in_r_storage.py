# attnprep: lora
# expect: passed
"""Correct: bare adapters stored transposed from loralib's, A (in, r) and B (r, out), used as x @ A @ B; merged() adds (A @ B).T."""
import math

import torch
import torch.nn as nn


class LoRALinear(nn.Module):
    """A stored (in, r) and B (r, out), used as x @ A @ B (the adapters transposed from loralib's)."""

    def __init__(self, in_features, out_features, r, alpha):
        super().__init__()
        self.base = nn.Linear(in_features, out_features)
        self.base.requires_grad_(False)
        self.lora_A = nn.Parameter(torch.empty(in_features, r))
        self.lora_B = nn.Parameter(torch.zeros(r, out_features))
        nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))
        self.scaling = alpha / r

    def forward(self, x):
        return self.base(x) + (x @ self.lora_A @ self.lora_B) * self.scaling

    def merged(self):
        out = nn.Linear(self.base.in_features, self.base.out_features)
        with torch.no_grad():
            out.weight.copy_(self.base.weight + (self.lora_A @ self.lora_B).T * self.scaling)
            out.bias.copy_(self.base.bias)
        return out
