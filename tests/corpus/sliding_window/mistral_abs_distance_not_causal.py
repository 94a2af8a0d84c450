# attnprep: sliding_window
# expect: mask_leak
# diagnosis: window_not_causal
"""Mistral-style band built from the distance |i - j| < window (a symmetric band): the window is right
but the future keys inside it are visible too."""

import math

import torch


def sliding_window_mask(seq_len, window, device=None):
    pos = torch.arange(seq_len, device=device)
    dist = pos[:, None] - pos[None, :]
    return dist.abs() < window


def sliding_window_attention(q, k, v, window, attention_mask=None):
    B, H, T, D = q.shape
    scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(D)
    allowed = sliding_window_mask(T, window, q.device)
    if attention_mask is not None:
        allowed = allowed & attention_mask[:, None, None, :]
    scores = scores.masked_fill(~allowed, float("-inf"))
    return torch.einsum("bhqk,bhkd->bhqd", scores.softmax(-1), v)
# bug-line: 15
