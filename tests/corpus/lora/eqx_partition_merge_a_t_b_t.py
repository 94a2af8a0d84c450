# attnprep: lora
# expect: wrong_output
# diagnosis: lora_merge_transposed
"""Equinox's partition habit: `trainable, frozen = partition(model)` by requires_grad, the forward
as a pure `lora_apply(a, b, base_w, base_b, x, scaling)` with `x @ W.T` everywhere, and `merged()`
computing the delta the way the JAX code stored its kernels, (in, out): `a.T @ b.T`. Forward is
right; the merged layer adds the transpose of B·A."""

import torch
import torch.nn as nn


def partition(module):
    trainable = {n: p for n, p in module.named_parameters() if p.requires_grad}
    frozen = {n: p for n, p in module.named_parameters() if not p.requires_grad}
    return trainable, frozen


def lora_apply(a, b, base_w, base_b, x, scaling):
    return x @ base_w.T + base_b + (x @ a.T) @ b.T * scaling


class LoRALinear(nn.Module):
    def __init__(self, in_features, out_features, r, alpha):
        super().__init__()
        self.base = nn.Linear(in_features, out_features)
        for p in self.base.parameters():
            p.requires_grad = False
        self.lora_A = nn.Linear(in_features, r, bias=False)
        self.lora_B = nn.Linear(r, out_features, bias=False)
        nn.init.zeros_(self.lora_B.weight)
        self.scaling = alpha / r

    def forward(self, x):
        return lora_apply(self.lora_A.weight, self.lora_B.weight, self.base.weight, self.base.bias, x, self.scaling)

    @torch.no_grad()
    def merged(self):
        trainable, frozen = partition(self)
        delta = trainable["lora_A.weight"].T @ trainable["lora_B.weight"].T
        out = nn.Linear(self.base.in_features, self.base.out_features)
        out.weight.copy_(frozen["base.weight"] + self.scaling * delta)
        out.bias.copy_(frozen["base.bias"])
        return out
# bug-line: 40
