# attnprep: swiglu
# expect: wrong_output
# diagnosis: swiglu_gelu
# The mistake: Gemma's own activation (tanh GELU) kept where SwiGLU has SiLU.
# Gemma's JAX FeedForward layout with SiLU: gating_einsum (2, d_model, d_ff) (gate then up, each
# (in, out)), linear (d_ff, d_model) used as x @ linear.
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class SwiGLU(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.gating_einsum = nn.Parameter(torch.randn(2, d_model, d_ff) / math.sqrt(d_model))
        self.linear = nn.Parameter(torch.randn(d_ff, d_model) / math.sqrt(d_ff))

    def forward(self, x):
        ff_gate = torch.einsum("...d,df->...f", x, self.gating_einsum[0])
        ff1 = torch.einsum("...d,df->...f", x, self.gating_einsum[1])
        return torch.einsum("...f,fd->...d", F.gelu(ff_gate, approximate="tanh") * ff1, self.linear)
# bug-line: 22
