# attnprep: swiglu
# expect: wrong_output
# diagnosis: swiglu_gate_up_swapped
"""GraphQL habits: a schema-like table maps each field of the FFN (gate, up, down) to the layer
that resolves it, and forward resolves fields by name through small resolver functions; the gate
and up fields were pointed at each other's layers."""
import torch
import torch.nn as nn
import torch.nn.functional as F

RESOLVERS = {
    "gate": "w3",
    "up": "w1",
    "down": "w2",
}


class SwiGLU(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)

    def resolve(self, field, value):
        return getattr(self, RESOLVERS[field])(value)

    def forward(self, x):
        gate = F.silu(self.resolve("gate", x))
        up = self.resolve("up", x)
        return self.resolve("down", gate * up)
# bug-line: 12, 13
