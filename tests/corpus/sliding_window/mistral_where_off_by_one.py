# attnprep: sliding_window
# expect: mask_leak
# diagnosis: window_off_by_one
"""Mistral-style band from a distance matrix and torch.where; the window test is distance <= window,
which lets window + 1 keys through."""

import math

import torch


def sliding_window_mask(seq_len: int, window: int, device=None) -> torch.Tensor:
    pos = torch.arange(seq_len, device=device)
    distance = pos[:, None] - pos[None, :]  # i - j
    return (distance >= 0) & (distance <= window)


def sliding_window_attention(q, k, v, window: int, attention_mask=None):
    B, H, T, D = q.shape
    scores = q @ k.transpose(-2, -1) / math.sqrt(D)
    allowed = sliding_window_mask(T, window, q.device)[None, None]
    if attention_mask is not None:
        allowed = allowed & attention_mask[:, None, None, :]
    scores = torch.where(allowed, scores, torch.finfo(scores.dtype).min)
    return scores.softmax(-1) @ v
# bug-line: 15
