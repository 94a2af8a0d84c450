# attnprep: sliding_window
# expect: mask_leak
# diagnosis: window_off_by_one
"""The band is built as Mistral-style triu(ones, diagonal=-window): one key too many at the far edge."""

import math

import torch
import torch.nn.functional as F


def sliding_window_mask(seq_len, window, device=None):
    ones = torch.ones(seq_len, seq_len, dtype=torch.bool, device=device)
    return torch.tril(ones) & torch.triu(ones, diagonal=-window)


def sliding_window_attention(q, k, v, window, attention_mask=None):
    B, H, T, D = q.shape
    scores = q @ k.transpose(-2, -1) / math.sqrt(D)  # (B, H, T, T)
    allowed = sliding_window_mask(T, window, device=q.device)  # (T, T)
    if attention_mask is not None:
        allowed = allowed & attention_mask[:, None, None, :]  # (B, 1, T, T)
    scores = scores.masked_fill(~allowed, float("-inf"))
    attn = F.softmax(scores, dim=-1)
    return attn @ v  # (B, H, T, D)
