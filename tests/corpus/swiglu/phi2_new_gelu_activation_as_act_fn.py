# attnprep: swiglu
# expect: wrong_output
# diagnosis: swiglu_gelu
"""Phi-2 habits (transformers' activations.py): an ACT2FN-like table of activation modules,
config.hidden_act picked by name, NewGELUActivation's tanh formula written out."""
import math

import torch
import torch.nn as nn


class NewGELUActivation(nn.Module):
    def forward(self, input):
        return 0.5 * input * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (input + 0.044715 * torch.pow(input, 3.0))))


class SiLUActivation(nn.Module):
    def forward(self, input):
        return input * torch.sigmoid(input)


ACT2FN = {"gelu_new": NewGELUActivation, "silu": SiLUActivation}


class SwiGLU(nn.Module):
    hidden_act = "gelu_new"

    def __init__(self, d_model, d_ff):
        super().__init__()
        self.gate_proj = nn.Linear(d_model, d_ff, bias=False)
        self.up_proj = nn.Linear(d_model, d_ff, bias=False)
        self.down_proj = nn.Linear(d_ff, d_model, bias=False)
        self.act_fn = ACT2FN[self.hidden_act]()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))
# bug-line: 26
