# attnprep: lora
# expect: wrong_output
# diagnosis: lora_merge_no_scale
"""Written after round 3's fixes: torchtune's LoRALinear layout (bare frozen weight / bias, lora_a /
lora_b), the forward right, merged() folding lora_b @ lora_a in without alpha / rank."""

import math

import torch
import torch.nn.functional as F
from torch import nn


class LoRALinear(nn.Module):
    def __init__(self, in_dim: int, out_dim: int, rank: int, alpha: float):
        super().__init__()
        self.scaling = alpha / rank
        linear = nn.Linear(in_dim, out_dim)
        self.weight = nn.Parameter(linear.weight.detach().clone(), requires_grad=False)
        self.bias = nn.Parameter(linear.bias.detach().clone(), requires_grad=False)
        self.lora_a = nn.Linear(in_dim, rank, bias=False)
        self.lora_b = nn.Linear(rank, out_dim, bias=False)
        nn.init.kaiming_uniform_(self.lora_a.weight, a=math.sqrt(5))
        nn.init.zeros_(self.lora_b.weight)

    def forward(self, x):
        return F.linear(x, self.weight, self.bias) + self.scaling * self.lora_b(self.lora_a(x))

    @torch.no_grad()
    def merged(self):
        out = nn.Linear(self.weight.shape[1], self.weight.shape[0])
        out.weight.copy_(self.weight + self.lora_b.weight @ self.lora_a.weight)
        out.bias.copy_(self.bias)
        return out
# bug-line: 32
