# attnprep: sliding_window
# expect: mask_leak
# diagnosis: padding_mask_ignored
"""面经写法：先判断"最后一列有没有 pad"再决定要不要加 padding mask —— 只认得右 padding；左 padding 的
batch 最后一列全是真 token，padding mask 整个被跳过。"""
import math

import torch


def sliding_window_mask(seq_len, window, device=None):
    idx = torch.arange(seq_len, device=device)
    gap = idx.view(-1, 1) - idx.view(1, -1)  # i - j
    return (gap >= 0) & (gap < window)


def sliding_window_attention(q, k, v, window, attention_mask=None):
    B, H, T, D = q.shape
    attn = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(D)
    keep = sliding_window_mask(T, window, q.device).expand(B, 1, T, T)
    if attention_mask is not None and bool(attention_mask[:, -1].logical_not().any()):  # 有 pad 才处理
        keep = keep & attention_mask.view(B, 1, 1, T)
    attn = attn.masked_fill(keep.logical_not(), float("-inf"))
    return torch.matmul(torch.softmax(attn, dim=-1), v)
# bug-line: 21
