# attnprep: geglu
# expect: wrong_output
# diagnosis: geglu_exact_gelu
"""nn.GELU() with its default: the exact erf form."""
import torch.nn as nn


class GeGLU(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.gate_proj = nn.Linear(d_model, d_ff, bias=False)
        self.up_proj = nn.Linear(d_model, d_ff, bias=False)
        self.down_proj = nn.Linear(d_ff, d_model, bias=False)
        self.act = nn.GELU()

    def forward(self, x):
        return self.down_proj(self.act(self.gate_proj(x)) * self.up_proj(x))
