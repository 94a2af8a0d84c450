# attnprep: sliding_window
# expect: mask_leak
# diagnosis: mask_after_softmax
"""Softmax first, then the blocked weights are set to 0: rows no longer sum to 1."""

import math

import torch
import torch.nn.functional as F


def sliding_window_mask(seq_len, window, device=None):
    ones = torch.ones(seq_len, seq_len, dtype=torch.bool, device=device)
    return torch.tril(ones) & torch.triu(ones, diagonal=-(window - 1))  # i - window < j <= i


def sliding_window_attention(q, k, v, window, attention_mask=None):
    B, H, T, D = q.shape
    scores = q @ k.transpose(-2, -1) / math.sqrt(D)  # (B, H, T, T)
    allowed = sliding_window_mask(T, window, device=q.device)  # (T, T)
    if attention_mask is not None:
        allowed = allowed & attention_mask[:, None, None, :]  # (B, 1, T, T)
    attn = F.softmax(scores, dim=-1)
    attn = attn.masked_fill(~allowed, 0.0)
    return attn @ v  # (B, H, T, D)
