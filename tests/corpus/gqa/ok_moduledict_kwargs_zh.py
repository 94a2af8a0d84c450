# attnprep: gqa
# expect: passed
"""正确：投影放在 nn.ModuleDict 里，forward 接受 **kwargs，掩码用 -1e4*1e5 的大负数。"""
import math
import torch
import torch.nn as nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0, **kwargs):
        super().__init__()
        self.头数 = num_heads
        self.键值头数 = num_kv_heads
        self.头维度 = d_model // num_heads
        self.投影 = nn.ModuleDict({
            "q": nn.Linear(d_model, d_model),
            "k": nn.Linear(d_model, num_kv_heads * self.头维度),
            "v": nn.Linear(d_model, num_kv_heads * self.头维度),
            "o": nn.Linear(d_model, d_model),
        })

    def forward(self, x, *args, **kwargs):
        attention_mask = args[0] if len(args) > 0 else kwargs.get("attention_mask")
        is_causal = args[1] if len(args) > 1 else kwargs.get("is_causal", False)
        B, T, C = x.shape
        组 = self.头数 // self.键值头数
        q = self.投影["q"](x).view(B, T, self.头数, self.头维度).transpose(1, 2)
        k = self.投影["k"](x).view(B, T, self.键值头数, 1, self.头维度).expand(B, T, self.键值头数, 组, self.头维度)
        v = self.投影["v"](x).view(B, T, self.键值头数, 1, self.头维度).expand(B, T, self.键值头数, 组, self.头维度)
        k = k.reshape(B, T, self.头数, self.头维度).transpose(1, 2)   # 每组连续：h // 组
        v = v.reshape(B, T, self.头数, self.头维度).transpose(1, 2)
        分数 = q @ k.transpose(-2, -1) / math.sqrt(self.头维度)
        if is_causal:
            分数 = 分数.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), -1e9)
        if attention_mask is not None:
            分数 = 分数.masked_fill(~attention_mask[:, None, None, :], -1e9)
        权重 = 分数.softmax(dim=-1)
        return self.投影["o"]((权重 @ v).transpose(1, 2).reshape(B, T, C))
