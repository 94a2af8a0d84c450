# attnprep: sliding_window
# expect: passed
"""Correct, nanoGPT-style: tril & triu band, masked_fill with -inf, F.softmax, @."""

import math

import torch
import torch.nn.functional as F


def sliding_window_mask(seq_len, window, device=None):
    ones = torch.ones(seq_len, seq_len, dtype=torch.bool, device=device)
    return torch.tril(ones) & torch.triu(ones, diagonal=-(window - 1))  # (T, T)


def sliding_window_attention(q, k, v, window, attention_mask=None):
    B, H, T, D = q.shape
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(D))  # (B, H, T, T)
    allowed = sliding_window_mask(T, window, device=q.device)
    if attention_mask is not None:
        allowed = allowed & attention_mask[:, None, None, :]
    att = att.masked_fill(~allowed, float("-inf"))
    att = F.softmax(att, dim=-1)
    return att @ v  # (B, H, T, D)
