# attnprep: causal
# expect: wrong_output
# diagnosis: causal_masks_diagonal + scale_by_dim
"""拼音变量名的手撕笔记：yanma（掩码）、fenshu（分数）、quanzhong（权重），注释用中文。
Pinyin identifiers and Chinese comments, as in a student's 手撕 notes."""
import math

import torch


def causal_mask(seq_len, device=None):
    # 下三角：第 i 个 query 只能看 j <= i 的 key
    hang = torch.arange(seq_len, device=device)[:, None]   # 行 = query
    lie = torch.arange(seq_len, device=device)[None, :]    # 列 = key
    return lie < hang


def causal_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    suofang = 1.0 / D  # 缩放
    fenshu = torch.matmul(q, k.transpose(-2, -1)) * suofang          # (B, H, T, T)
    yanma = causal_mask(T, device=q.device)                          # (T, T)
    if attention_mask is not None:
        yanma = yanma & attention_mask[:, None, None, :].bool()      # padding 的 key 不看
    fenshu = fenshu.masked_fill(~yanma, float("-inf"))
    quanzhong = torch.softmax(fenshu, dim=-1)                         # 每行和为 1
    return torch.matmul(quanzhong, v)
# bug-line: 15, 20
