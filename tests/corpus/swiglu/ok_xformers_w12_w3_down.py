# attnprep: swiglu
# expect: passed
# xformers.ops.SwiGLU's module layout: w12 = Linear(d_model, 2·d_ff) fused gate and up, w3 =
# Linear(d_ff, d_model) the *down* projection (xformers' own naming), bias=False.
import torch
import torch.nn as nn
import torch.nn.functional as F


class SwiGLU(nn.Module):
    def __init__(self, d_model, d_ff, bias=False):
        super().__init__()
        self.w12 = nn.Linear(d_model, 2 * d_ff, bias=bias)
        self.w3 = nn.Linear(d_ff, d_model, bias=bias)
        self.hidden_features = d_ff

    def forward(self, x):
        x12 = self.w12(x)
        x1, x2 = x12.chunk(2, dim=-1)
        hidden = F.silu(x1) * x2
        return self.w3(hidden)
