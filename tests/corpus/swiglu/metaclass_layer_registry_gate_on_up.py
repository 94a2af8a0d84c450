# attnprep: swiglu
# expect: wrong_output
# diagnosis: swiglu_gate_up_swapped
"""A metaclass registering every layer class by its lower-cased name at class creation (LayerMeta,
the registry read by a build() factory), the gated unit written as a GLU helper that takes the
activated branch and the linear branch."""
import torch
import torch.nn as nn
import torch.nn.functional as F

LAYERS = {}


class LayerMeta(type(nn.Module)):
    def __new__(mcls, name, bases, ns):
        cls = super().__new__(mcls, name, bases, ns)
        LAYERS[name.lower()] = cls
        return cls


def glu(activated, linear):
    return F.silu(activated) * linear


class SwiGLU(nn.Module, metaclass=LayerMeta):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)  # gate
        self.w3 = nn.Linear(d_model, d_ff, bias=False)  # up
        self.w2 = nn.Linear(d_ff, d_model, bias=False)  # down

    def forward(self, x):
        gate, up = self.w1(x), self.w3(x)
        return self.w2(glu(up, gate))


def build(name, *args):
    return LAYERS[name](*args)
# bug-line: 34
