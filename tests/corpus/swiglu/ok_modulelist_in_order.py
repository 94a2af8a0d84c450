# attnprep: swiglu
# expect: passed
"""Correct: the three layers in an nn.ModuleList in the order gate, up, down, unpacked in forward; autocast off."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class SwiGLU(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.layers = nn.ModuleList([
            nn.Linear(d_model, d_ff, bias=False),
            nn.Linear(d_model, d_ff, bias=False),
            nn.Linear(d_ff, d_model, bias=False),
        ])

    def forward(self, x):
        gate, up, down = self.layers
        with torch.autocast(device_type=x.device.type, enabled=False):
            return down(F.silu(gate(x)) * up(x))
