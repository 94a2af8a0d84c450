# attnprep: lora
# expect: passed
"""Correct: the base frozen through self.base.apply(freeze) with a function that sets
requires_grad False on each parameter, lora_dropout = nn.Identity(), the update scaled with
torch.mul, merged() via torch.addmm(W, B, A, alpha=scaling) into copy.deepcopy(self.base)."""

import copy

import torch
import torch.nn as nn


def freeze(m):
    for p in m.parameters(recurse=False):
        p.requires_grad = False


class LoRALinear(nn.Module):
    def __init__(self, in_features, out_features, r, alpha):
        super().__init__()
        self.base = nn.Linear(in_features, out_features)
        self.base.apply(freeze)
        self.lora_dropout = nn.Identity()
        self.lora_A = nn.Linear(in_features, r, bias=False)
        self.lora_B = nn.Linear(r, out_features, bias=False)
        nn.init.zeros_(self.lora_B.weight)
        self.r, self.alpha = r, alpha

    @property
    def scaling(self):
        return self.alpha / self.r

    def forward(self, x):
        return self.base(x) + torch.mul(self.lora_B(self.lora_A(self.lora_dropout(x))), self.scaling)

    @torch.no_grad()
    def merged(self):
        m = copy.deepcopy(self.base)
        m.weight.copy_(torch.addmm(self.base.weight, self.lora_B.weight, self.lora_A.weight, alpha=self.scaling))
        return m
