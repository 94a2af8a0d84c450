# attnprep: lora
# expect: passed
"""LoRA with the low-rank factors as nn.Linear but applied through F.linear and an einsum merge;
type-hinted, the base frozen with requires_grad_(False)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class LoRALinear(nn.Module):
    def __init__(self, in_features: int, out_features: int, r: int, alpha: float) -> None:
        super().__init__()
        self.base = nn.Linear(in_features, out_features).requires_grad_(False)
        self.lora_A = nn.Linear(in_features, r, bias=False)
        self.lora_B = nn.Linear(r, out_features, bias=False)
        nn.init.kaiming_uniform_(self.lora_A.weight, a=5 ** 0.5)
        nn.init.zeros_(self.lora_B.weight)
        self.r, self.alpha = r, alpha

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        delta = F.linear(F.linear(x, self.lora_A.weight), self.lora_B.weight)
        return self.base(x) + delta * (self.alpha / self.r)

    def merged(self) -> nn.Linear:
        with torch.no_grad():
            w = self.base.weight + torch.einsum("or,ri->oi", self.lora_B.weight, self.lora_A.weight) * (self.alpha / self.r)
            out = nn.Linear(w.shape[1], w.shape[0], device=w.device, dtype=w.dtype)
            out.weight.copy_(w)
            out.bias.copy_(self.base.bias)
        return out
