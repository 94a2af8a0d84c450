# attnprep: lora
# expect: passed
"""Correct: the adapter added through a forward hook registered on base (a PEFT-less monkey-patch
habit): base(x) returns base's output plus the low-rank update; forward just calls base."""
import torch
import torch.nn as nn


class LoRALinear(nn.Module):
    def __init__(self, in_features, out_features, r, alpha):
        super().__init__()
        self.base = nn.Linear(in_features, out_features).requires_grad_(False)
        self.lora_A = nn.Linear(in_features, r, bias=False)
        self.lora_B = nn.Linear(r, out_features, bias=False)
        nn.init.zeros_(self.lora_B.weight)
        self.scaling = alpha / r
        self.base.register_forward_hook(self._add_update)

    def _add_update(self, module, args, output):
        return output + self.lora_B(self.lora_A(args[0])) * self.scaling

    def forward(self, x):
        return self.base(x)

    @torch.no_grad()
    def merged(self):
        out = nn.Linear(self.base.in_features, self.base.out_features, device=self.base.weight.device,
                        dtype=self.base.weight.dtype)
        out.weight.copy_(self.base.weight + self.scaling * self.lora_B.weight @ self.lora_A.weight)
        out.bias.copy_(self.base.bias)
        return out
