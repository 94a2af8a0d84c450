# attnprep: norms
# expect: passed
"""Correct: gains named in pinyin (suofang, pianyi), LayerNorm's bias declared before its weight."""
import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.suofang = nn.Parameter(torch.ones(dim))  # 缩放 (weight)

    def forward(self, x):
        pingfang_junzhi = x.float().pow(2).mean(dim=-1, keepdim=True)        # 平方均值
        guiyi = x.float() * torch.rsqrt(pingfang_junzhi + self.eps)
        return guiyi.to(x.dtype) * self.suofang


class LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.pianyi = nn.Parameter(torch.zeros(dim))   # 偏移 (bias), declared first
        self.suofang = nn.Parameter(torch.ones(dim))   # 缩放 (weight)

    def forward(self, x):
        xf = x.float()
        junzhi = xf.mean(-1, keepdim=True)
        fangcha = (xf - junzhi).pow(2).mean(-1, keepdim=True)
        y = ((xf - junzhi) / torch.sqrt(fangcha + self.eps)).to(x.dtype)
        return y * self.suofang + self.pianyi
