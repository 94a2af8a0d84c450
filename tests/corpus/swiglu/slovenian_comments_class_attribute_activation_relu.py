# attnprep: swiglu
# expect: wrong_output
# diagnosis: swiglu_relu
"""Slovenski komentarji (Slovenian comments and names: vrata, gor, dol, aktivacija, skrito); the
gate's activation chosen in forward by comparing a class attribute with "silu", and that attribute
holds "relu"."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class SwiGLU(nn.Module):
    aktivacija = "relu"  # aktivacija vrat

    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)  # vrata
        self.w3 = nn.Linear(d_model, d_ff, bias=False)  # gor
        self.w2 = nn.Linear(d_ff, d_model, bias=False)  # dol

    def forward(self, x):
        vrata = self.w1(x)
        if self.aktivacija == "silu":
            vrata = F.silu(vrata)
        else:
            vrata = F.relu(vrata)
        skrito = vrata * self.w3(x)
        return self.w2(skrito)
# bug-line: 13
