# attnprep: lora
# expect: wrong_output
# diagnosis: lora_scale_inverted
"""Adapter classes registered by __init_subclass__ (a base AdapterLayer keeps a name -> class table
filled as each subclass is defined, with the adapter's kind as a class keyword), the scaling worked
out by a classmethod from the adapter's hyper-parameters."""
import math

import torch
import torch.nn as nn


class AdapterLayer(nn.Module):
    registry = {}

    def __init_subclass__(cls, kind=None, **kw):
        super().__init_subclass__(**kw)
        if kind is not None:
            AdapterLayer.registry[kind] = cls

    @classmethod
    def scaling_for(cls, r, alpha):
        return r / alpha


class LoRALinear(AdapterLayer, kind="lora"):
    def __init__(self, in_features, out_features, r, alpha):
        super().__init__()
        self.base = nn.Linear(in_features, out_features)
        self.base.requires_grad_(False)
        self.lora_A = nn.Linear(in_features, r, bias=False)
        self.lora_B = nn.Linear(r, out_features, bias=False)
        nn.init.kaiming_uniform_(self.lora_A.weight, a=math.sqrt(5))
        nn.init.zeros_(self.lora_B.weight)
        self.scaling = self.scaling_for(r, alpha)

    def forward(self, x):
        return self.base(x) + self.lora_B(self.lora_A(x)) * self.scaling

    @torch.no_grad()
    def merged(self):
        out = nn.Linear(self.base.in_features, self.base.out_features)
        out.weight.copy_(self.base.weight + self.scaling * (self.lora_B.weight @ self.lora_A.weight))
        out.bias.copy_(self.base.bias)
        return out


def build(kind, *args):
    return AdapterLayer.registry[kind](*args)
# bug-line: 23
