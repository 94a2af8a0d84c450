# attnprep: swiglu
# expect: wrong_output
# diagnosis: swiglu_silu_on_product
"""SiLU around the product of both branches (Hugging Face names)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class SwiGLU(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.gate_proj = nn.Linear(d_model, d_ff, bias=False)
        self.up_proj = nn.Linear(d_model, d_ff, bias=False)
        self.down_proj = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x):
        h = self.gate_proj(x) * self.up_proj(x)
        h = F.silu(h)
        return self.down_proj(h)
# bug-line: 19, 20
