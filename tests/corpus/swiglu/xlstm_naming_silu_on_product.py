# attnprep: swiglu
# expect: wrong_output
# diagnosis: swiglu_silu_on_product
"""xLSTM's feed-forward naming (proj_up_gate, proj_up, proj_down, ffn act_fn from a small registry)
with the gated product written as the mLSTM block writes its z-gate."""
import torch
import torch.nn as nn
import torch.nn.functional as F

_act_fn_registry = {"silu": F.silu, "swish": F.silu, "relu": F.relu}


class SwiGLU(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.proj_up_gate = nn.Linear(d_model, d_ff, bias=False)
        self.proj_up = nn.Linear(d_model, d_ff, bias=False)
        self.proj_down = nn.Linear(d_ff, d_model, bias=False)
        self.act_fn = _act_fn_registry["swish"]

    def forward(self, x):
        gate_preact = self.proj_up_gate(x)
        z = self.proj_up(x)
        h = self.act_fn(gate_preact * z)
        return self.proj_down(h)
# bug-line: 24
