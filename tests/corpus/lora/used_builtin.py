# attnprep: lora
# expect: used_builtin
# diagnosis: used_builtin
"""A LoRA layer that also runs attention through F.scaled_dot_product_attention: forbidden everywhere."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class LoRALinear(nn.Module):
    def __init__(self, in_features, out_features, r, alpha):
        super().__init__()
        self.base = nn.Linear(in_features, out_features).requires_grad_(False)
        self.lora_A = nn.Linear(in_features, r, bias=False)
        self.lora_B = nn.Linear(r, out_features, bias=False)
        nn.init.zeros_(self.lora_B.weight)
        self.scaling = alpha / r

    def forward(self, x):
        h = self.base(x)
        h = h + F.scaled_dot_product_attention(h[..., None, :], h[..., None, :], h[..., None, :])[..., 0, :] * 0
        return h + self.lora_B(self.lora_A(x)) * self.scaling

    @torch.no_grad()
    def merged(self):
        m = nn.Linear(self.base.in_features, self.base.out_features)
        m.weight.copy_(self.base.weight + self.scaling * (self.lora_B.weight @ self.lora_A.weight))
        m.bias.copy_(self.base.bias)
        return m
