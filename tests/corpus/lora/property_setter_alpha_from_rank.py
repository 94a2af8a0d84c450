# attnprep: lora
# expect: wrong_output
# diagnosis: lora_alpha_ignored
"""C# property habits: PascalCase properties with getters and setters (Rank, Alpha, Scaling) over
private fields; the constructor assigned the Alpha property from the rank."""
import torch
import torch.nn as nn


class LoRALinear(nn.Module):
    def __init__(self, in_features, out_features, r, alpha):
        super().__init__()
        self._rank = 1
        self._alpha = 1.0
        self.Rank = r
        self.Alpha = r
        self.base = nn.Linear(in_features, out_features)
        self.base.weight.requires_grad = False
        self.base.bias.requires_grad = False
        self.lora_A = nn.Linear(in_features, r, bias=False)
        self.lora_B = nn.Linear(r, out_features, bias=False)
        nn.init.zeros_(self.lora_B.weight)

    @property
    def Rank(self):
        return self._rank

    @Rank.setter
    def Rank(self, value):
        if value <= 0:
            raise ValueError("rank must be positive")
        self._rank = int(value)

    @property
    def Alpha(self):
        return self._alpha

    @Alpha.setter
    def Alpha(self, value):
        self._alpha = float(value)

    @property
    def Scaling(self):
        return self.Alpha / self.Rank

    def forward(self, x):
        return self.base(x) + self.lora_B(self.lora_A(x)) * self.Scaling

    @torch.no_grad()
    def merged(self):
        layer = nn.Linear(self.base.in_features, self.base.out_features).to(self.base.weight)
        layer.weight.copy_(self.base.weight + self.Scaling * (self.lora_B.weight @ self.lora_A.weight))
        layer.bias.copy_(self.base.bias)
        return layer
# bug-line: 16
