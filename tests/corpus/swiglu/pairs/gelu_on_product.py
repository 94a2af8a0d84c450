# attnprep: swiglu
# expect: wrong_output
# diagnosis: swiglu_gelu + swiglu_silu_on_product
"""Two slips in one line: GELU instead of SiLU, and it wraps the product of both branches."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class SwiGLU(nn.Module):
    def __init__(self, d_model: int, d_ff: int) -> None:
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.gelu(self.w1(x) * self.w3(x)))
