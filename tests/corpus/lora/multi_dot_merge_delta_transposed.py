# attnprep: lora
# expect: wrong_output
# diagnosis: lora_merge_transposed
"""The merge as one torch.linalg.multi_dot over the factors' matrices, the adapter applied in
forward through F.linear on the bare weights, `scaling` as a read-only property, the base frozen
by a loop over its parameters."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class LoRALinear(nn.Module):
    def __init__(self, in_features, out_features, r, alpha):
        super().__init__()
        self.r, self.alpha = r, alpha
        self.base = nn.Linear(in_features, out_features)
        for p in self.base.parameters():
            p.requires_grad = False
        self.lora_A = nn.Linear(in_features, r, bias=False)
        self.lora_B = nn.Linear(r, out_features, bias=False)
        nn.init.zeros_(self.lora_B.weight)

    @property
    def scaling(self):
        return self.alpha / self.r

    def forward(self, x):
        z = F.linear(F.linear(x, self.lora_A.weight), self.lora_B.weight)
        return self.base(x) + z * self.scaling

    @torch.no_grad()
    def merged(self):
        delta = torch.linalg.multi_dot([self.lora_A.weight.T, self.lora_B.weight.T])
        out = nn.Linear(self.base.in_features, self.base.out_features).to(self.base.weight)
        out.weight.copy_(self.base.weight + self.scaling * delta)
        out.bias.copy_(self.base.bias)
        return out
# bug-line: 33
