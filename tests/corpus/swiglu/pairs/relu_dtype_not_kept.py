# attnprep: swiglu
# expect: wrong_output
# diagnosis: swiglu_relu + output_dtype_not_kept
"""ReLU on the gate, and the float32 upcast never cast back (a float32 output for bfloat16 input)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class SwiGLU(nn.Module):
    def __init__(self, d_model: int, d_ff: int):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)

    def forward(self, x):
        h = F.relu(self.w1(x).float()) * self.w3(x).float()
        return h @ self.w2.weight.float().t()
