"""LoRA: a frozen linear layer plus a trainable low-rank update (Hu et al., 2021).

The pretrained layer base (W: (out, in), b: (out,)) is frozen; only two small matrices train:
lora_A (in -> r) and lora_B (r -> out), r << min(in, out). The update B·A (out, in) has rank
at most r and is scaled by alpha / r, so that changing r does not change how large the update is.
lora_B starts at zero: the layer starts as exactly base, and the gradient still reaches
lora_B through A·x (A is random). After training, merged() folds the update into one plain
nn.Linear: W' = W + (alpha / r) · B·A, with no extra cost at inference.
"""

import torch
import torch.nn as nn


class LoRALinear(nn.Module):
    """out = base(x) + lora_B(lora_A(x)) * (alpha / r), with base frozen."""

    def __init__(self, in_features: int, out_features: int, r: int, alpha: float):
        super().__init__()
        self.base = nn.Linear(in_features, out_features)  # the pretrained layer, with bias
        self.base.requires_grad_(False)  # frozen: weight and bias get no gradient
        self.lora_A = nn.Linear(in_features, r, bias=False)  # down: random (Kaiming uniform)
        self.lora_B = nn.Linear(r, out_features, bias=False)  # up: zero, the layer starts as base
        nn.init.zeros_(self.lora_B.weight)
        self.scaling = alpha / r

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # x: (..., in_features)
        update = self.lora_B(self.lora_A(x))  # (..., r) -> (..., out_features)
        return self.base(x) + update * self.scaling  # (..., out_features)

    @torch.no_grad()
    def merged(self) -> nn.Linear:
        """One plain nn.Linear computing the same as forward: W + scaling · B A, the same bias."""
        delta = self.lora_B.weight @ self.lora_A.weight  # (out, r) @ (r, in) -> (out, in)
        layer = nn.Linear(self.base.in_features, self.base.out_features)
        layer = layer.to(device=self.base.weight.device, dtype=self.base.weight.dtype)
        layer.weight.copy_(self.base.weight + delta * self.scaling)
        layer.bias.copy_(self.base.bias)
        return layer
