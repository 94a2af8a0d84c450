# attnprep: swiglu
# expect: passed
"""Correct: forward decorated with torch.compile (eager backend) on a bound method, nn.SiLU module, reshape to 2-D."""
import torch
import torch.nn as nn


class SwiGLU(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)
        self.act = nn.SiLU()

    @torch.compile(backend="eager")
    def forward(self, x):
        shape = x.shape
        h = x.reshape(-1, shape[-1])
        y = self.w2(self.act(self.w1(h)) * self.w3(h))
        return y.reshape(*shape[:-1], -1)
