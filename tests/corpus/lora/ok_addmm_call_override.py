# attnprep: lora
# expect: passed
"""An nn.Module whose __call__ is overridden (no forward), the frozen path by torch.addmm on the
flattened tokens, the adapter by torch.chain_matmul-like @ chains."""
import torch
import torch.nn as nn


class LoRALinear(nn.Module):
    def __init__(self, in_features, out_features, r, alpha):
        super().__init__()
        self.base = nn.Linear(in_features, out_features).requires_grad_(False)
        self.lora_A = nn.Linear(in_features, r, bias=False)
        self.lora_B = nn.Linear(r, out_features, bias=False)
        torch.nn.init.zeros_(self.lora_B.weight)
        self.s = alpha / r

    def __call__(self, x):
        lead = x.shape[:-1]
        x2 = x.reshape(-1, x.shape[-1])
        y = torch.addmm(self.base.bias, x2, self.base.weight.t())
        y = y + self.s * (x2 @ self.lora_A.weight.t() @ self.lora_B.weight.t())
        return y.reshape(*lead, -1)

    @torch.no_grad()
    def merged(self):
        m = nn.Linear(self.base.in_features, self.base.out_features).to(self.base.weight)
        m.weight.copy_(torch.addmm(self.base.weight, self.lora_B.weight, self.lora_A.weight, alpha=self.s))
        m.bias.copy_(self.base.bias)
        return m
