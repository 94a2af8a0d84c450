# attnprep: lora
# expect: passed
"""Correct: minLoRA-style (cccntu/minLoRA) torch.nn.utils.parametrize: the update is a
parametrization registered on base.weight, so base.weight reads W + (alpha / r) B A and forward is
just self.base(x); the frozen original lives at base.parametrizations.weight.original; lora_A /
lora_B stay modules of the layer (the parametrization reaches them through a one-item list, so they
are registered once); merged() copies the parametrized weight."""

import torch
import torch.nn.utils.parametrize as parametrize
from torch import nn


class LoRAParametrization(nn.Module):
    def __init__(self, owner, scale):
        super().__init__()
        self._owner = [owner]  # not a submodule: the owner registers lora_A / lora_B itself
        self.scale = scale

    def forward(self, X):
        o = self._owner[0]
        return X + (o.lora_B.weight @ o.lora_A.weight) * self.scale


class LoRALinear(nn.Module):
    def __init__(self, in_features, out_features, r, alpha):
        super().__init__()
        self.base = nn.Linear(in_features, out_features)
        self.lora_A = nn.Linear(in_features, r, bias=False)
        self.lora_B = nn.Linear(r, out_features, bias=False)
        nn.init.zeros_(self.lora_B.weight)
        parametrize.register_parametrization(self.base, "weight", LoRAParametrization(self, alpha / r))
        self.base.parametrizations.weight.original.requires_grad_(False)
        self.base.bias.requires_grad_(False)

    def forward(self, x):
        return self.base(x)

    @torch.no_grad()
    def merged(self):
        w = self.base.weight
        out = nn.Linear(w.shape[1], w.shape[0], device=w.device, dtype=w.dtype)
        out.weight.copy_(w)
        out.bias.copy_(self.base.bias)
        return out
