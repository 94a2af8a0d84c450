# attnprep: swiglu
# expect: passed
"""Bare nn.Parameter matrices, einsum for the projections and SiLU written out as x * sigmoid(x);
Chinese comments as in an interview notebook."""

import math

import torch
import torch.nn as nn


class SwiGLU(nn.Module):
    def __init__(self, d_model: int, d_ff: int):
        super().__init__()
        # 三个权重矩阵，形状按 nn.Linear 的 (out, in) 存
        self.W_gate = nn.Parameter(torch.randn(d_ff, d_model) / math.sqrt(d_model))
        self.W_up = nn.Parameter(torch.randn(d_ff, d_model) / math.sqrt(d_model))
        self.W_down = nn.Parameter(torch.randn(d_model, d_ff) / math.sqrt(d_ff))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        g = torch.einsum("...d,fd->...f", x, self.W_gate)  # 门控分支 (..., d_ff)
        u = torch.einsum("...d,fd->...f", x, self.W_up)  # 线性分支 (..., d_ff)
        h = g * torch.sigmoid(g) * u  # SiLU(g) = g * sigmoid(g)，再乘上线性分支
        return torch.einsum("...f,df->...d", h, self.W_down)  # 投影回 d_model
