# attnprep: lora
# expect: wrong_output
# diagnosis: lora_b_not_zero + lora_merge_transposed
"""Athugasemdir á íslensku (Icelandic comments and names: grunnur, kvarði, sameinað, þyngdir); the
adapter's B left at nn.Linear's default (random) initialisation because the zeroing loop walks the
wrong list, and the merged weight adds (A^T B^T) reshaped, i.e. A·B read as (in, out)."""
import torch
import torch.nn as nn


class LoRALinear(nn.Module):
    def __init__(self, in_features, out_features, r, alpha):
        super().__init__()
        self.kvardi = alpha / r  # kvarði
        self.base = nn.Linear(in_features, out_features)
        for p in self.base.parameters():
            p.requires_grad = False  # grunnurinn er frystur
        self.lora_A = nn.Linear(in_features, r, bias=False)
        self.lora_B = nn.Linear(r, out_features, bias=False)
        for lag in (self.lora_A,):  # núllstilla B
            nn.init.zeros_(lag.weight)

    def forward(self, x):
        return self.base(x) + self.lora_B(self.lora_A(x)) * self.kvardi

    def merged(self):
        thyngdir = self.lora_A.weight.t() @ self.lora_B.weight.t()  # (in, out)
        sameinad = nn.Linear(self.base.in_features, self.base.out_features)
        with torch.no_grad():
            sameinad.weight.copy_(self.base.weight + thyngdir.reshape(self.base.weight.shape) * self.kvardi)
            sameinad.bias.copy_(self.base.bias)
        return sameinad
# bug-line: 20, 30
