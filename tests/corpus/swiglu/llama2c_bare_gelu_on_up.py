# attnprep: swiglu
# expect: wrong_output
# diagnosis: swiglu_gelu + swiglu_gate_up_swapped
"""llama2.c's FFN ported line by line (hb = w1 x, hb2 = w3 x, silu on hb, hb *= hb2, out = w2 hb), with
bare weight matrices; the activation went to hb2 (w3's output) and became GELU."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class SwiGLU(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w1 = nn.Parameter(torch.empty(d_ff, d_model))
        self.w2 = nn.Parameter(torch.empty(d_model, d_ff))
        self.w3 = nn.Parameter(torch.empty(d_ff, d_model))
        for w in (self.w1, self.w2, self.w3):
            nn.init.normal_(w, std=0.02)

    def forward(self, x):
        # matmul(s->hb, x, w1); matmul(s->hb2, x, w3)
        hb = x @ self.w1.T
        hb2 = x @ self.w3.T
        # "SwiGLU non-linearity"
        hb2 = F.gelu(hb2)
        hb = hb * hb2
        return hb @ self.w2.T
# bug-line: 25
