# attnprep: lora
# expect: wrong_output
# diagnosis: lora_scale_inverted
"""torchtune layout; the forward writes rank / alpha while merged() has alpha / rank right: the
mistake is in forward only (a sub-variant), and the merged layer then disagrees with it."""

import math

import torch
import torch.nn.functional as F
from torch import nn


class LoRALinear(nn.Module):
    def __init__(self, in_dim: int, out_dim: int, rank: int, alpha: float):
        super().__init__()
        self.rank, self.alpha = rank, alpha
        linear = nn.Linear(in_dim, out_dim)
        self.weight = nn.Parameter(linear.weight.detach().clone(), requires_grad=False)
        self.bias = nn.Parameter(linear.bias.detach().clone(), requires_grad=False)
        self.lora_a = nn.Linear(in_dim, rank, bias=False)
        self.lora_b = nn.Linear(rank, out_dim, bias=False)
        nn.init.kaiming_uniform_(self.lora_a.weight, a=math.sqrt(5))
        nn.init.zeros_(self.lora_b.weight)

    def forward(self, x):
        out = F.linear(x, self.weight, self.bias)
        lora_out = (self.rank / self.alpha) * self.lora_b(self.lora_a(x))
        return out + lora_out

    @torch.no_grad()
    def merged(self):
        m = nn.Linear(self.weight.shape[1], self.weight.shape[0])
        m.weight.copy_(self.weight + (self.alpha / self.rank) * self.lora_b.weight @ self.lora_a.weight)
        m.bias.copy_(self.bias)
        return m
# bug-line: 28
