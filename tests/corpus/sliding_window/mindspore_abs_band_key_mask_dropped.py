# attnprep: sliding_window
# expect: mask_leak
# diagnosis: window_not_causal + padding_mask_ignored
"""MindSpore habits (ops.Abs, ops.Less, ops.LogicalAnd as wrappers, perm tuples); one slip in each
object: sliding_window_mask keeps |i - j| < window (the band reaches into the future), and the
attention builds its own causal band but forgets the key padding mask it was given."""

import math

import torch


def Abs(x):
    return torch.abs(x)


def Less(x, y):
    return x < y


def LogicalAnd(x, y):
    return torch.logical_and(x, y)


def sliding_window_mask(seq_len, window, device=None):
    i = torch.arange(seq_len, device=device)
    dist = i.view(-1, 1) - i.view(1, -1)
    return Less(Abs(dist), window)


def sliding_window_attention(q, k, v, window, attention_mask=None):
    B, H, T, D = q.shape
    i = torch.arange(T, device=q.device)
    dist = i.view(-1, 1) - i.view(1, -1)
    keep = LogicalAnd(dist >= 0, Less(dist, window)).view(1, 1, T, T)
    if attention_mask is not None:
        keep = keep.expand(B, 1, T, T)
    score = torch.matmul(q, k.permute(0, 1, 3, 2)) / math.sqrt(D)
    score = score.masked_fill(~keep, float("-inf"))
    return torch.matmul(torch.softmax(score, dim=-1), v)
# bug-line: 28, 37
