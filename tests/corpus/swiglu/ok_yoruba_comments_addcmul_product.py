# attnprep: swiglu
# expect: passed
"""Àlàyé ní èdè Yorùbá (Yoruba comments), Llama's w1 / w3 / w2 names, the gated product written as
torch.addcmul on a zero tensor (a fused-multiply habit from CUDA code) and SiLU spelled out as
g * sigmoid(g)."""
import torch
import torch.nn as nn


class SwiGLU(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)  # ẹnu-ọ̀nà (gate)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)  # òkè (up)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)  # ìsàlẹ̀ (down)

    def forward(self, x):
        g = self.w1(x)
        u = self.w3(x)
        silu_g = g * torch.sigmoid(g)  # SiLU láti ọwọ́
        h = torch.addcmul(torch.zeros_like(u), silu_g, u)  # 0 + silu(g) * u
        return self.w2(h)
