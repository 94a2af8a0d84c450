# attnprep: norms
# expect: passed
"""正确：面试笔记风格的 RMSNorm 和 LayerNorm，统计量在 float32 里算，算完再转回输入的 dtype。"""
import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    # RMSNorm：不减均值、没有 bias，只除以均方根
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps  # eps 放在根号里面
        self.weight = nn.Parameter(torch.ones(dim))  # 可学习的缩放 g

    def forward(self, x):
        原始类型 = x.dtype
        x32 = x.to(torch.float32) if x.dtype != torch.float64 else x  # 半精度先升到 float32
        均方 = (x32 * x32).mean(dim=-1, keepdim=True)
        y = x32 / torch.sqrt(均方 + self.eps)
        return self.weight * y.to(原始类型)


class LayerNorm(nn.Module):
    # LayerNorm：减均值，除以标准差（有偏方差，除以 dim，不是 dim-1）
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))  # gamma
        self.bias = nn.Parameter(torch.zeros(dim))  # beta

    def forward(self, x):
        原始类型 = x.dtype
        x32 = x.to(torch.float32) if x.dtype != torch.float64 else x
        均值 = x32.mean(dim=-1, keepdim=True)
        中心化 = x32 - 均值
        方差 = 中心化.pow(2).sum(dim=-1, keepdim=True) / x32.shape[-1]  # 有偏
        y = 中心化 / torch.sqrt(方差 + self.eps)
        return self.weight * y.to(原始类型) + self.bias
