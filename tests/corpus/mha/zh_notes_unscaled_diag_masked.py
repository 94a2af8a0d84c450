# attnprep: mha
# expect: wrong_output
# diagnosis: missing_scale + causal_masks_diagonal
"""面试手撕 MHA 笔记：先投影，再拆头，算分数，加 mask，softmax，乘 V，合并头，输出投影。"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        # 每个头的维度 = d_model / 头数
        self.h = num_heads
        self.d_k = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)  # W_Q
        self.k_proj = nn.Linear(d_model, d_model)  # W_K
        self.v_proj = nn.Linear(d_model, d_model)  # W_V
        self.o_proj = nn.Linear(d_model, d_model)  # W_O
        self.drop = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        b, n, _ = x.shape
        # 拆头：(b, n, d) -> (b, h, n, d_k)
        q = self.q_proj(x).view(b, n, self.h, self.d_k).permute(0, 2, 1, 3)
        k = self.k_proj(x).view(b, n, self.h, self.d_k).permute(0, 2, 1, 3)
        v = self.v_proj(x).view(b, n, self.h, self.d_k).permute(0, 2, 1, 3)
        # 注意力分数 (b, h, n, n)
        scores = q @ k.transpose(-1, -2)
        # 因果 mask：上三角（未来）不能看
        if is_causal:
            future = torch.triu(torch.ones(n, n, device=x.device), diagonal=0).bool()
            scores = scores.masked_fill(future, float("-inf"))
        # padding mask：True 是真实 token，False 是 pad，只遮 key 的列
        if attention_mask is not None:
            scores = scores.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        p = self.drop(F.softmax(scores, dim=-1))
        out = p @ v  # (b, h, n, d_k)
        # 合并头：先换回 (b, n, h, d_k) 再 reshape
        out = out.permute(0, 2, 1, 3).reshape(b, n, -1)
        return self.o_proj(out)
# bug-line: 29, 32
