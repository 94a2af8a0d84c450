# attnprep: swiglu
# expect: wrong_output
# diagnosis: swiglu_sigmoid
"""NeMo-like activation registry: a dict from names to callables (lambdas and torch functions),
the FFN's `activation` a string looked up at construction, gated FFN names linear_fc1_gate /
linear_fc1_up / linear_fc2."""
import torch
import torch.nn as nn

ACTIVATIONS = {
    "gelu": lambda t: torch.nn.functional.gelu(t),
    "relu": torch.relu,
    "silu": torch.sigmoid,
    "squared-relu": lambda t: torch.relu(t) ** 2,
}


class SwiGLU(nn.Module):
    def __init__(self, d_model, d_ff, activation="silu"):
        super().__init__()
        self.linear_fc1_gate = nn.Linear(d_model, d_ff, bias=False)
        self.linear_fc1_up = nn.Linear(d_model, d_ff, bias=False)
        self.linear_fc2 = nn.Linear(d_ff, d_model, bias=False)
        self.activation_func = ACTIVATIONS[activation]

    def forward(self, x):
        return self.linear_fc2(self.activation_func(self.linear_fc1_gate(x)) * self.linear_fc1_up(x))
# bug-line: 13
