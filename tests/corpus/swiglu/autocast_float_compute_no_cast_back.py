# attnprep: swiglu
# expect: wrong_output
# diagnosis: output_dtype_not_kept
"""Mixed-precision habits: the whole block in float32 (F.linear on upcast weights, autocast off), and
the float32 result returned as it is; only half-precision inputs show it."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class SwiGLU(nn.Module):
    def __init__(self, d_model: int, d_ff: int):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.autocast(device_type=x.device.type, enabled=False):
            x32 = x.float()
            gate = F.linear(x32, self.w1.weight.float())
            up = F.linear(x32, self.w3.weight.float())
            h = F.silu(gate) * up
            out = F.linear(h, self.w2.weight.float())
        return out
# bug-line: 25
