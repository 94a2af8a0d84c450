# attnprep: lora
# expect: wrong_output
# diagnosis: lora_merge_transposed
"""Doctest-documented LoRA: the class docstring shows the layer starting as its base
(`>>> torch.equal(layer(x), layer.base(x))`), `delta_weight()` has its own example on the shape,
`merged()` copies base into a fresh nn.Linear. delta_weight computes A.T @ B.T, the transpose of
B @ A: right in shape when in == out, wrong in every entry."""

import torch
from torch import nn


class LoRALinear(nn.Module):
    """A frozen linear layer plus a trainable low-rank update.

    >>> layer = LoRALinear(4, 4, r=2, alpha=4)
    >>> x = torch.randn(3, 4)
    >>> torch.equal(layer(x), layer.base(x))
    True
    """

    def __init__(self, in_features, out_features, r, alpha):
        super().__init__()
        self.base = nn.Linear(in_features, out_features)
        for p in self.base.parameters():
            p.requires_grad = False
        self.lora_A = nn.Linear(in_features, r, bias=False)
        self.lora_B = nn.Linear(r, out_features, bias=False)
        nn.init.zeros_(self.lora_B.weight)
        self.scaling = alpha / r

    def forward(self, x):
        return self.base(x) + self.lora_B(self.lora_A(x)) * self.scaling

    def delta_weight(self):
        """The update as a (out, in) matrix.

        >>> LoRALinear(4, 4, r=2, alpha=4).delta_weight().shape
        torch.Size([4, 4])
        """
        return (self.lora_A.weight.T @ self.lora_B.weight.T) * self.scaling

    @torch.no_grad()
    def merged(self):
        out = nn.Linear(self.base.in_features, self.base.out_features,
                        device=self.base.weight.device, dtype=self.base.weight.dtype)
        out.weight.copy_(self.base.weight + self.delta_weight())
        out.bias.copy_(self.base.bias)
        return out
# bug-line: 41
