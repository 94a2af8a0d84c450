# attnprep: sliding_window
# expect: mask_leak
# diagnosis: window_off_by_one
"""Attention builds its own (right) band inline, but sliding_window_mask lets window + 1 keys in."""

import math

import torch
import torch.nn.functional as F


def sliding_window_mask(seq_len, window, device=None):
    i = torch.arange(seq_len, device=device)[:, None]  # queries
    j = torch.arange(seq_len, device=device)[None, :]  # keys
    return (j <= i) & (j >= i - window)


def sliding_window_attention(q, k, v, window, attention_mask=None):
    B, H, T, D = q.shape
    scores = q @ k.transpose(-2, -1) / math.sqrt(D)  # (B, H, T, T)
    allowed = torch.ones(T, T, dtype=torch.bool, device=q.device).tril() & torch.ones(T, T, dtype=torch.bool, device=q.device).triu(-(window - 1))  # (T, T)
    if attention_mask is not None:
        allowed = allowed & attention_mask[:, None, None, :]  # (B, 1, T, T)
    scores = scores.masked_fill(~allowed, float("-inf"))
    attn = F.softmax(scores, dim=-1)
    return attn @ v  # (B, H, T, D)
