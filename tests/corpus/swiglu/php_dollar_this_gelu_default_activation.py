# attnprep: swiglu
# expect: wrong_output
# diagnosis: swiglu_gelu
"""A PHP programmer's habits: `this` bound in place of self inside methods, setters named
setFoo, snake-case arrays of options with `??` defaults (`opts.get(key) or default`); the
activation looked up in an options array whose default is GELU."""
import torch
import torch.nn as nn
import torch.nn.functional as F

ACTIVATIONS = {"silu": F.silu, "gelu": F.gelu, "relu": F.relu}


class SwiGLU(nn.Module):
    def __init__(self, d_model, d_ff, opts=None):
        super().__init__()
        this = self
        opts = opts or {}
        this.w1 = nn.Linear(d_model, d_ff, bias=False)  # gate
        this.w3 = nn.Linear(d_model, d_ff, bias=False)  # up
        this.w2 = nn.Linear(d_ff, d_model, bias=False)  # down
        this.setActivation(opts.get("hidden_act") or "gelu")

    def setActivation(self, name):
        this = self
        this.act_name = name
        this.act = ACTIVATIONS[name]

    def forward(self, x):
        this = self
        return this.w2(this.act(this.w1(x)) * this.w3(x))
# bug-line: 22
