# attnprep: swiglu
# expect: wrong_output
# diagnosis: swiglu_gate_up_swapped
"""DBRX's GLU expert written for one expert (`DbrxExpertGLU`: `x1 = x @ w1`, `x2 = x @ v1`,
`x1 = activation_fn(x1); x1 = x1 * x2; x1 @ w2`), the activation picked from an `ACT2FN`-like dict,
the contract's w1 / w3 / w2 names kept. The activation is applied to the up branch (w3) and the
gate branch (w1) is multiplied in raw."""

import torch
import torch.nn as nn
import torch.nn.functional as F

ACT2FN = {"silu": F.silu, "gelu": F.gelu, "relu": F.relu}


class SwiGLU(nn.Module):
    def __init__(self, d_model, d_ff, hidden_act="silu"):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)
        self.activation_fn = ACT2FN[hidden_act]

    def forward(self, x):
        x1 = self.w1(x)
        x2 = self.w3(x)
        x2 = self.activation_fn(x2)
        x1 = x1 * x2
        return self.w2(x1)
# bug-line: 27
