# attnprep: sliding_window
# expect: passed
"""Correct: the band as tril(ones) & ~tril(ones, -window) (the keys at least `window` back removed),
the padding and band merged into one additive bias with torch.where, softmax in float32."""

import math

import torch
import torch.nn.functional as F


def sliding_window_mask(seq_len, window, device=None):
    ones = torch.ones(seq_len, seq_len, dtype=torch.bool, device=device)
    return torch.tril(ones) & ~torch.tril(ones, diagonal=-window)


def sliding_window_attention(q, k, v, window, attention_mask=None):
    T, D = q.shape[-2:]
    keep = sliding_window_mask(T, window, q.device)[None, None]
    if attention_mask is not None:
        keep = keep & attention_mask[:, None, None, :]
    bias = torch.where(keep, 0.0, float("-inf")).to(q.dtype)
    s = q @ k.transpose(-1, -2) / math.sqrt(D) + bias
    return F.softmax(s, dim=-1, dtype=torch.float32).to(q.dtype) @ v
