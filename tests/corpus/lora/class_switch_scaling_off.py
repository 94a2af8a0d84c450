# attnprep: lora
# expect: wrong_output
# diagnosis: lora_alpha_ignored
"""Feature switches as class attributes, the way some training repos keep them ("turn on when alpha
!= r"): the scaling alpha / r is computed and stored, but applied only under `if self.SCALE_UPDATE:`,
and the switch is left at False. Forward and merged() both add B·A unscaled."""

import torch
import torch.nn as nn


class LoRALinear(nn.Module):
    SCALE_UPDATE = False  # switch: multiply the low-rank update by alpha / r

    def __init__(self, in_features, out_features, r, alpha):
        super().__init__()
        self.base = nn.Linear(in_features, out_features)
        for p in self.base.parameters():
            p.requires_grad = False
        self.down = nn.Parameter(torch.empty(r, in_features))
        self.up = nn.Parameter(torch.zeros(out_features, r))
        nn.init.kaiming_uniform_(self.down, a=5 ** 0.5)
        self.scaling = alpha / r

    def forward(self, x):
        update = x @ self.down.t() @ self.up.t()
        if self.SCALE_UPDATE:
            update = update * self.scaling
        return self.base(x) + update

    @torch.no_grad()
    def merged(self):
        delta = self.up @ self.down
        if self.SCALE_UPDATE:
            delta = delta * self.scaling
        fused = nn.Linear(self.base.in_features, self.base.out_features).to(self.base.weight)
        fused.weight.copy_(self.base.weight + delta)
        fused.bias.copy_(self.base.bias)
        return fused
# bug-line: 13
