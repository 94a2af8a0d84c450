# attnprep: sliding_window
# expect: mask_leak
# diagnosis: window_off_by_one
"""Counts the window without the query itself: query i sees i and window - 2 keys before it."""

import math

import torch
import torch.nn.functional as F


def sliding_window_mask(seq_len, window, device=None):
    i = torch.arange(seq_len, device=device)[:, None]
    j = torch.arange(seq_len, device=device)[None, :]
    return (j <= i) & (i - j < window - 1)


def sliding_window_attention(q, k, v, window, attention_mask=None):
    B, H, T, D = q.shape
    scores = q @ k.transpose(-2, -1) / math.sqrt(D)  # (B, H, T, T)
    allowed = sliding_window_mask(T, window, device=q.device)
    if attention_mask is not None:
        allowed = allowed & attention_mask[:, None, None, :]
    scores = scores.masked_fill(~allowed, float("-inf"))
    return F.softmax(scores, dim=-1) @ v  # (B, H, T, D)
