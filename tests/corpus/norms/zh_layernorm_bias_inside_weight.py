# attnprep: norms
# expect: wrong_output
"""Chinese comments; the LayerNorm adds its bias before multiplying by the weight: (h + b) * w
instead of h * w + b."""

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))  # 可学习的缩放

    def forward(self, x):
        dtype = x.dtype
        h = x.to(torch.float32)  # 统计量用 float32 计算
        ms = h.pow(2).mean(-1, keepdim=True)  # 均方
        return self.weight * (h * torch.rsqrt(ms + self.eps)).to(dtype)


class LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))  # gamma
        self.bias = nn.Parameter(torch.zeros(dim))  # beta

    def forward(self, x):
        dtype = x.dtype
        h = x.to(torch.float32)
        mu = h.mean(-1, keepdim=True)  # 均值
        var = ((h - mu) ** 2).mean(-1, keepdim=True)  # 有偏方差
        h = (h - mu) / torch.sqrt(var + self.eps)  # 标准化
        return ((h.to(dtype) + self.bias) * self.weight)  # 先加偏置再缩放
# bug-line: 36
