# attnprep: lora
# expect: wrong_output
# diagnosis: lora_alpha_ignored
"""loralib's Linear re-assembled from functools.partial-built layers (NoBias = partial(nn.Linear,
bias=False)); self.scaling is stored in __init__ and used by merged(), but forward adds the update
unscaled."""

import functools

import torch
import torch.nn as nn

NoBias = functools.partial(nn.Linear, bias=False)


class LoRALinear(nn.Module):
    def __init__(self, in_features, out_features, r, alpha):
        super().__init__()
        self.base = nn.Linear(in_features, out_features)
        for p in self.base.parameters():
            p.requires_grad = False
        self.lora_A = NoBias(in_features, r)
        self.lora_B = NoBias(r, out_features)
        nn.init.zeros_(self.lora_B.weight)
        self.scaling = alpha / r

    def forward(self, x):
        return self.base(x) + self.lora_B(self.lora_A(x))

    @torch.no_grad()
    def merged(self):
        out = nn.Linear(self.base.in_features, self.base.out_features).to(self.base.weight)
        out.weight.copy_(self.base.weight + self.scaling * (self.lora_B.weight @ self.lora_A.weight))
        out.bias.copy_(self.base.bias)
        return out
# bug-line: 28
