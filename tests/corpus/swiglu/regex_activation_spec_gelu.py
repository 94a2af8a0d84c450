# attnprep: swiglu
# expect: wrong_output
# diagnosis: swiglu_gelu
"""A one-line spec string parsed with a compiled regex (re.compile(r"(\\w+)=(\\w+)")) into the
FFN's options; the activation named in the spec was gelu."""
import re

import torch.nn as nn
import torch.nn.functional as F

SPEC = "kind=gated act=gelu bias=no"
OPTION = re.compile(r"(\w+)=(\w+)")
ACTIVATIONS = {"silu": F.silu, "gelu": F.gelu, "relu": F.relu}


def parse(spec):
    return {m.group(1): m.group(2) for m in OPTION.finditer(spec)}


class SwiGLU(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        opts = parse(SPEC)
        use_bias = opts.get("bias", "no") == "yes"
        self.act = ACTIVATIONS[opts["act"]]
        self.w1 = nn.Linear(d_model, d_ff, bias=use_bias)
        self.w3 = nn.Linear(d_model, d_ff, bias=use_bias)
        self.w2 = nn.Linear(d_ff, d_model, bias=use_bias)

    def forward(self, x):
        return self.w2(self.act(self.w1(x)) * self.w3(x))
# bug-line: 11
