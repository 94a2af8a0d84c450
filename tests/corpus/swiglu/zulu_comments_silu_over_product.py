# attnprep: swiglu
# expect: wrong_output
# diagnosis: swiglu_silu_on_product
"""isiZulu comments; the SiLU applied to the product of the gate and up projections instead of to
the gate alone."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class SwiGLU(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        # isango, ukuphakamisa, ukwehlisa
        self.gate_proj = nn.Linear(d_model, d_ff, bias=False)
        self.up_proj = nn.Linear(d_model, d_ff, bias=False)
        self.down_proj = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x):
        # Bala isango nokuphakamisa
        g = self.gate_proj(x)
        u = self.up_proj(x)
        # Sebenzisa i-SiLU bese uphindaphinda
        h = F.silu(g * u)
        return self.down_proj(h)
# bug-line: 24
