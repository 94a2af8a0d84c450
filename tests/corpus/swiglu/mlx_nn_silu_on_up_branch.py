# attnprep: swiglu
# expect: wrong_output
# diagnosis: swiglu_gate_up_swapped
"""mlx-lm's MLP habits (gate_proj / up_proj / down_proj held as w1 / w3 / w2 to match the contract,
`nn.silu` as a free function, `__call__`-shaped forward). The activation is applied to the up
projection w3 and the gate w1 is left linear."""

import torch
import torch.nn as nn


def silu(x):
    return x * torch.sigmoid(x)


class SwiGLU(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)

    def forward(self, x):
        return self.w2(self.w1(x) * silu(self.w3(x)))
# bug-line: 24
