# attnprep: lora
# expect: wrong_output
# diagnosis: output_dtype_not_kept
"""The adapter path upcast to float32 for accuracy (as QLoRA code does) and never cast back: a
bfloat16 input comes back float32."""

import torch
import torch.nn as nn


class LoRALinear(nn.Module):
    def __init__(self, in_features, out_features, r, alpha):
        super().__init__()
        self.base = nn.Linear(in_features, out_features).requires_grad_(False)
        self.lora_A = nn.Linear(in_features, r, bias=False)
        self.lora_B = nn.Linear(r, out_features, bias=False)
        nn.init.zeros_(self.lora_B.weight)
        self.scaling = alpha / r

    def forward(self, x):
        a = x.float() @ self.lora_A.weight.float().T
        update = a @ self.lora_B.weight.float().T * self.scaling  # float32
        return self.base(x).float() + update  # the input's dtype lost

    @torch.no_grad()
    def merged(self):
        m = nn.Linear(self.base.in_features, self.base.out_features)
        m.weight.copy_(self.base.weight + self.scaling * (self.lora_B.weight @ self.lora_A.weight))
        m.bias.copy_(self.base.bias)
        return m
