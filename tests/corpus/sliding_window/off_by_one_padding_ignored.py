# attnprep: sliding_window
# expect: mask_leak
# diagnosis: window_off_by_one + padding_mask_ignored
"""Mistral-style band built with torch.where on an (i - j) distance: the window keeps window + 1 keys
(i - j <= window), and attention never uses attention_mask."""

import math

import torch


def sliding_window_mask(seq_len, window, device=None):
    pos = torch.arange(seq_len, device=device)
    dist = pos[:, None] - pos[None, :]
    return torch.where((dist >= 0) & (dist <= window), True, False)


def sliding_window_attention(q, k, v, window, attention_mask=None):
    T = q.size(-2)
    scores = q @ k.transpose(-2, -1) * (1.0 / math.sqrt(q.size(-1)))
    scores = scores.masked_fill(~sliding_window_mask(T, window, q.device), float("-inf"))
    return torch.softmax(scores, dim=-1) @ v
