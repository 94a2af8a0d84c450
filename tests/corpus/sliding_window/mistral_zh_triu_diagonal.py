# attnprep: sliding_window
# expect: mask_leak
# diagnosis: window_off_by_one
"""Mistral-style with Chinese comments; the band's lower edge is triu(diagonal=-window), one key
further back than the window allows."""

import math

import torch
import torch.nn.functional as F


def sliding_window_mask(seq_len, window, device=None):
    ones = torch.ones(seq_len, seq_len, dtype=torch.bool, device=device)
    lower = torch.tril(ones)  # 因果：只能看过去
    band = torch.triu(ones, diagonal=-window)  # 窗口：最近 window 个
    return lower & band


def sliding_window_attention(q, k, v, window, attention_mask=None):
    bsz, n_heads, seqlen, head_dim = q.shape
    scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(head_dim)  # (B, H, T, T)
    mask = sliding_window_mask(seqlen, window, device=q.device)
    if attention_mask is not None:
        mask = mask & attention_mask[:, None, None, :]  # 填充掩码
    scores = scores.masked_fill(mask.logical_not(), float("-inf"))
    scores = F.softmax(scores.float(), dim=-1).type_as(q)
    return torch.matmul(scores, v)
# bug-line: 16
