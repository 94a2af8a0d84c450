# attnprep: swiglu
# expect: wrong_output
# diagnosis: swiglu_relu
"""Keras-port habits: the activation named by string ("swish", Keras's word for SiLU) and looked up
in a class-level table of torch functions, the two input projections called kernel_gate / kernel_up
and the output kernel_out, the table written one entry a line."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class SwiGLU(nn.Module):
    _ACTIVATIONS = {
        "gelu": F.gelu,
        "swish": F.relu,
        "tanh": torch.tanh,
    }

    def __init__(self, d_model, d_ff, activation="swish"):
        super().__init__()
        self.kernel_gate = nn.Linear(d_model, d_ff, bias=False)
        self.kernel_up = nn.Linear(d_model, d_ff, bias=False)
        self.kernel_out = nn.Linear(d_ff, d_model, bias=False)
        self.act = self._ACTIVATIONS[activation]

    def forward(self, x):
        gated = self.act(self.kernel_gate(x))
        return self.kernel_out(gated * self.kernel_up(x))
# bug-line: 15
