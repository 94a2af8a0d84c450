# attnprep: lora
# expect: wrong_output
# diagnosis: lora_scale_inverted
"""forward right, merged() written from memory as W + (r / alpha) · B A: the merged layer alone
is off (a sub-variant of the inverted scale). Interview-notes style with type hints."""

import torch
import torch.nn as nn


class LoRALinear(nn.Module):
    def __init__(self, in_features: int, out_features: int, r: int, alpha: float) -> None:
        super().__init__()
        self.r, self.alpha = r, alpha
        self.base = nn.Linear(in_features, out_features)
        self.base.requires_grad_(False)
        self.lora_A = nn.Linear(in_features, r, bias=False)
        self.lora_B = nn.Linear(r, out_features, bias=False)
        nn.init.zeros_(self.lora_B.weight)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.base(x) + self.lora_B(self.lora_A(x)) * (self.alpha / self.r)

    @torch.no_grad()
    def merged(self) -> nn.Linear:
        fused = nn.Linear(self.base.in_features, self.base.out_features)
        fused.weight.copy_(self.base.weight + (self.r / self.alpha) * (self.lora_B.weight @ self.lora_A.weight))
        fused.bias.copy_(self.base.bias)
        return fused
