# attnprep: norms
# expect: wrong_output
# diagnosis: norm_wrong_dim + norm_no_upcast
"""中文注释的面试稿: LayerNorm 在 dim=0 上求统计量 (wrong dim), RMSNorm 没有转 float32 (no upcast)."""

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))  # 缩放参数

    def forward(self, x):
        # 均方根，直接在原精度上算
        ms = torch.einsum("...d,...d->...", x, x).unsqueeze(-1) / x.shape[-1]
        return self.weight * (x / torch.sqrt(ms + self.eps))


class LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        dt = x.dtype
        h = x.float()
        mean = h.mean(0, keepdim=True)  # 均值
        var = h.var(0, keepdim=True, unbiased=False)  # 方差 (有偏)
        h = (h - mean) / torch.sqrt(var + self.eps)
        return self.weight * h.to(dt) + self.bias
