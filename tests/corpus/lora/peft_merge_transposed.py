# attnprep: lora
# expect: wrong_output
# diagnosis: lora_merge_transposed
"""PEFT's LoraLayer names (scaling, get_delta_weight); the delta is written as transpose(A) @ transpose(B)
transposed the wrong way round — (A.T @ B.T) is (in, out), added to an (out, in) weight with in == out."""

import torch
import torch.nn as nn


class LoRALinear(nn.Module):
    def __init__(self, in_features, out_features, r, alpha):
        super().__init__()
        self.base = nn.Linear(in_features, out_features)
        for p in self.base.parameters():
            p.requires_grad = False
        self.lora_A = nn.Linear(in_features, r, bias=False)
        self.lora_B = nn.Linear(r, out_features, bias=False)
        nn.init.kaiming_uniform_(self.lora_A.weight, a=5 ** 0.5)
        nn.init.zeros_(self.lora_B.weight)
        self.scaling = alpha / r

    def get_delta_weight(self):
        return (self.lora_A.weight.T @ self.lora_B.weight.T) * self.scaling

    def forward(self, x):
        return self.base(x) + self.lora_B(self.lora_A(x)) * self.scaling

    @torch.no_grad()
    def merged(self):
        out = nn.Linear(self.base.in_features, self.base.out_features)
        out.weight.data = self.base.weight.data + self.get_delta_weight()
        out.bias.data = self.base.bias.data.clone()
        return out
# bug-line: 24
