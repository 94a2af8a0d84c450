# attnprep: lora
# expect: wrong_output
# diagnosis: lora_merge_no_scale + lora_merge_transposed
"""forward right; merged() adds A.T @ B.T and forgets alpha / r (loralib style, bare parameters)."""

import torch
import torch.nn as nn


class LoRALinear(nn.Module):
    def __init__(self, in_features, out_features, r, alpha):
        super().__init__()
        self.base = nn.Linear(in_features, out_features)
        self.base.requires_grad_(False)
        self.lora_A = nn.Parameter(torch.randn(r, in_features) / in_features ** 0.5)
        self.lora_B = nn.Parameter(torch.zeros(out_features, r))
        self.scaling = alpha / r

    def forward(self, x):
        return self.base(x) + (x @ self.lora_A.transpose(0, 1) @ self.lora_B.transpose(0, 1)) * self.scaling

    @torch.no_grad()
    def merged(self):
        m = nn.Linear(self.base.in_features, self.base.out_features)
        m.weight.copy_(self.base.weight + self.lora_A.T @ self.lora_B.T)
        m.bias.copy_(self.base.bias)
        return m
