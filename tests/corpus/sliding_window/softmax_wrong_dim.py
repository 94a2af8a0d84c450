# attnprep: sliding_window
# expect: wrong_output
# diagnosis: softmax_wrong_dim
"""softmax over the queries (dim=-2) instead of the keys."""

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
    scores = scores.masked_fill(~allowed, float("-inf"))
    attn = F.softmax(scores, dim=-2)
    return attn @ v  # (B, H, T, D)
