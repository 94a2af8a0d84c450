# attnprep: swiglu
# expect: wrong_output
# diagnosis: swiglu_sigmoid
""""Swish is sigmoid": torch.sigmoid on the gate, the x · factor forgotten."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class SwiGLU(nn.Module):
    def __init__(self, d_model: int, d_ff: int):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate = self.w1(x)
        swish = torch.sigmoid(gate)  # Swish(x) = x * sigmoid(x) ... forgot the x
        return self.w2(swish * self.w3(x))
