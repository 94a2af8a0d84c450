# attnprep: sliding_window
# expect: wrong_output
# diagnosis: window_mask_inverted
"""sliding_window_mask returns the blocked positions and attention fills where True: right outputs, wrong mask."""

import math

import torch
import torch.nn.functional as F


def sliding_window_mask(seq_len, window, device=None):
    ones = torch.ones(seq_len, seq_len, dtype=torch.bool, device=device)
    return torch.triu(ones, diagonal=1) | torch.tril(ones, diagonal=-window)  # True = masked out


def sliding_window_attention(q, k, v, window, attention_mask=None):
    B, H, T, D = q.shape
    scores = q @ k.transpose(-2, -1) / math.sqrt(D)  # (B, H, T, T)
    allowed = sliding_window_mask(T, window, device=q.device)  # (T, T)
    if attention_mask is not None:
        allowed = allowed | ~attention_mask[:, None, None, :]  # blocked
    scores = scores.masked_fill(allowed, float("-inf"))
    attn = F.softmax(scores, dim=-1)
    return attn @ v  # (B, H, T, D)
# bug-line: 14
