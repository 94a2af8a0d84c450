# attnprep: mha
# expect: mask_leak
# diagnosis: scale_by_dim + mask_after_softmax
"""小红书面经笔记风格：中文注释、emoji 式的分点（①②③），q/k/v 用 chunk 从一个拼起来的输出里拆。
两处错：缩放写成了除以 head_dim（笔记里写"除以 d 防止点积太大"），以及先 softmax 再把被屏蔽
的位置乘成 0（mask 放在 softmax 之后，行和不再是 1）。"""

import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.n_head = num_heads
        self.d_k = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        # ① 投影 + 拆头：(B, T, C) -> (B, H, T, d_k)
        q, k, v = [p(x).view(B, T, self.n_head, self.d_k).transpose(1, 2) for p in (self.q_proj, self.k_proj, self.v_proj)]
        # ② 打分，除以 d 防止点积太大
        att = q @ k.transpose(-2, -1) / self.d_k
        att = att.softmax(dim=-1)
        # ③ mask：能看的位置 = 1，看不到的乘成 0
        keep = torch.ones(B, 1, T, T, dtype=att.dtype, device=x.device)
        if is_causal:
            keep = keep * torch.tril(torch.ones(T, T, dtype=att.dtype, device=x.device))
        if attention_mask is not None:
            keep = keep * attention_mask[:, None, None, :].to(att.dtype)
        att = att * keep
        att = self.dropout(att)
        # ④ 加权求和 + 合并头 + 输出投影
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.o_proj(y)
# bug-line: 28, 29, 36
