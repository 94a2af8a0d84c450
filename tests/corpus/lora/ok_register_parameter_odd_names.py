# attnprep: lora
# expect: passed
"""Correct: A and B registered with register_parameter under names 'down' and 'up' as bare (r, in) / (out, r)
matrices used through F.linear; merged() through nn.utils.parameters_to_vector-free simple math."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class LoRALinear(nn.Module):
    def __init__(self, in_features, out_features, r, alpha):
        super().__init__()
        self.base = nn.Linear(in_features, out_features)
        self.base.weight.requires_grad = False
        self.base.bias.requires_grad = False
        self.register_parameter("down", nn.Parameter(torch.empty(r, in_features).uniform_(-0.1, 0.1)))
        self.register_parameter("up", nn.Parameter(torch.zeros(out_features, r)))
        self.factor = float(alpha) / float(r)

    def forward(self, x):
        return self.base(x) + self.factor * F.linear(F.linear(x, self.down), self.up)

    def merged(self):
        lin = nn.Linear(self.base.in_features, self.base.out_features).to(self.base.weight.device, self.base.weight.dtype)
        with torch.no_grad():
            lin.weight.copy_(self.base.weight + self.factor * (self.up @ self.down))
            lin.bias.copy_(self.base.bias)
        return lin
