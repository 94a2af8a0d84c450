# attnprep: lora
# expect: passed
"""Correct: A stored (in, r) and B stored (r, out) as bare parameters (x @ A @ B, the JAX habit), base frozen
with requires_grad_(False), merged() with torch.addmm into a fresh nn.Linear."""
import torch
import torch.nn as nn


class LoRALinear(nn.Module):
    def __init__(self, in_features: int, out_features: int, r: int, alpha: float):
        super().__init__()
        self.base = nn.Linear(in_features, out_features).requires_grad_(False)
        self.lora_A = nn.Parameter(torch.randn(in_features, r) / r)
        self.lora_B = nn.Parameter(torch.zeros(r, out_features))
        self.scale = alpha / r

    def forward(self, x):
        return self.base(x) + (x @ self.lora_A @ self.lora_B) * self.scale

    @torch.no_grad()
    def merged(self) -> nn.Linear:
        out = nn.Linear(self.base.in_features, self.base.out_features, device=self.base.weight.device,
                        dtype=self.base.weight.dtype)
        out.weight.copy_(torch.addmm(self.base.weight, self.lora_B.T, self.lora_A.T, alpha=self.scale))
        out.bias.copy_(self.base.bias)
        return out
