# attnprep: mha
# expect: passed
"""Correct: every name in Chinese characters (self.查询, 分数 …), the scale a 0-d tensor made without a device."""
import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    """变量名直接用中文（Python 3 允许）。"""

    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.头数 = num_heads
        self.头维 = d_model // num_heads
        self.查询 = nn.Linear(d_model, d_model)
        self.键 = nn.Linear(d_model, d_model)
        self.值 = nn.Linear(d_model, d_model)
        self.输出 = nn.Linear(d_model, d_model)
        self.丢弃 = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        批, 长, 宽 = x.shape
        拆头 = lambda t: t.view(批, 长, self.头数, self.头维).transpose(1, 2)  # noqa: E731
        q, k, v = 拆头(self.查询(x)), 拆头(self.键(x)), 拆头(self.值(x))
        分数 = q @ k.transpose(-2, -1) / torch.sqrt(torch.tensor(self.头维, dtype=x.dtype))
        if attention_mask is not None:
            分数 = 分数.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            上三角 = torch.ones(长, 长, dtype=torch.bool, device=x.device).triu(1)
            分数 = 分数.masked_fill(上三角, float("-inf"))
        权重 = self.丢弃(分数.softmax(dim=-1))
        return self.输出((权重 @ v).transpose(1, 2).reshape(批, 长, 宽))
