# attnprep: swiglu
# expect: wrong_output
# diagnosis: swiglu_silu_on_product
"""Nótaí Gaeilge (Irish comments and names: geata, suas, síos, céimeanna); the hidden value built by a
loop over a class-level list of stage names run in order, and the list puts the multiplication by
the up branch before the SiLU."""
import torch.nn as nn
import torch.nn.functional as F


class SwiGLU(nn.Module):
    CEIMEANNA = ["iolraigh", "gniomhaigh"]  # céimeanna an gheata, in ord

    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)  # geata
        self.w3 = nn.Linear(d_model, d_ff, bias=False)  # suas
        self.w2 = nn.Linear(d_ff, d_model, bias=False)  # síos

    def forward(self, x):
        suas = self.w3(x)
        h = self.w1(x)
        for ceim in self.CEIMEANNA:
            if ceim == "gniomhaigh":
                h = F.silu(h)
            elif ceim == "iolraigh":
                h = h * suas
        return self.w2(h)
# bug-line: 12
