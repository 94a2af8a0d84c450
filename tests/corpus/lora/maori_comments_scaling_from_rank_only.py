# attnprep: lora
# expect: wrong_output
# diagnosis: lora_alpha_ignored
"""Māori comments; the scaling kept in a dict of the layer's hyper-parameters where alpha was
stored but the scale entry computed from the rank alone (1 / r)."""
import torch
import torch.nn as nn


class LoRALinear(nn.Module):
    def __init__(self, in_features, out_features, r, alpha):
        super().__init__()
        # Ngā tawhā o te paparanga
        self.hparams = {"r": r, "alpha": alpha}
        self.hparams["scale"] = 1.0 / self.hparams["r"]
        self.base = nn.Linear(in_features, out_features)
        self.base.weight.requires_grad_(False)
        self.base.bias.requires_grad_(False)
        self.lora_A = nn.Linear(in_features, r, bias=False)
        self.lora_B = nn.Linear(r, out_features, bias=False)
        nn.init.kaiming_uniform_(self.lora_A.weight, a=5 ** 0.5)
        nn.init.zeros_(self.lora_B.weight)

    def forward(self, x):
        # Te putanga: te taumata + te whakarerekētanga
        return self.base(x) + self.lora_B(self.lora_A(x)) * self.hparams["scale"]

    def merged(self):
        layer = nn.Linear(self.base.in_features, self.base.out_features)
        with torch.no_grad():
            delta = self.lora_B.weight @ self.lora_A.weight * self.hparams["scale"]
            layer.weight.copy_(self.base.weight + delta)
            layer.bias.copy_(self.base.bias)
        return layer
# bug-line: 15
