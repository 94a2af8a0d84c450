# attnprep: lora
# expect: wrong_output
# diagnosis: lora_alpha_ignored + lora_merge_transposed
"""Two objects, one mistake each: the adapter path of forward divides by r only (alpha dropped), and
merged() folds in A.T @ B.T (square layers only run; it has the right shape there)."""
import torch
import torch.nn as nn


class LoRALinear(nn.Module):
    def __init__(self, in_features: int, out_features: int, r: int, alpha: float):
        super().__init__()
        self.base = nn.Linear(in_features, out_features)
        for p in self.base.parameters():
            p.requires_grad_(False)
        self.lora_A = nn.Linear(in_features, r, bias=False)
        self.lora_B = nn.Linear(r, out_features, bias=False)
        nn.init.zeros_(self.lora_B.weight)
        self.r, self.alpha = r, alpha

    def forward(self, x):
        return self.base(x) + self.lora_B(self.lora_A(x)) / self.r

    @torch.no_grad()
    def merged(self) -> nn.Linear:
        A, B = self.lora_A.weight, self.lora_B.weight
        delta = (A.T @ B.T) * (self.alpha / self.r)
        lin = nn.Linear(self.base.in_features, self.base.out_features,
                        device=self.base.weight.device, dtype=self.base.weight.dtype)
        lin.weight.copy_(self.base.weight + delta)
        lin.bias.copy_(self.base.bias)
        return lin
# bug-line: 22, 27
