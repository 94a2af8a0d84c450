# attnprep: swiglu
# expect: wrong_output
# diagnosis: swiglu_gate_up_swapped
"""Qwen2MLP-style one-liner whose SiLU is applied to the up projection (w3) instead of the gate (w1)."""

import torch
import torch.nn as nn


class SwiGLU(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.hidden_size = d_model
        self.intermediate_size = d_ff
        self.w1 = nn.Linear(self.hidden_size, self.intermediate_size, bias=False)  # gate_proj
        self.w3 = nn.Linear(self.hidden_size, self.intermediate_size, bias=False)  # up_proj
        self.w2 = nn.Linear(self.intermediate_size, self.hidden_size, bias=False)  # down_proj
        self.act_fn = nn.SiLU()

    def forward(self, x):
        down_proj = self.w2(self.act_fn(self.w3(x)) * self.w1(x))
        return down_proj
# bug-line: 21
