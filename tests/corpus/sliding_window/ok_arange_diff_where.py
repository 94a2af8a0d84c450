# attnprep: sliding_window
# expect: passed
"""The band as 0 <= i - j < window from one distance matrix, an additive float bias, einsum: correct."""

import math

import torch


def sliding_window_mask(seq_len, window, device=None):
    d = torch.arange(seq_len, device=device).view(-1, 1) - torch.arange(seq_len, device=device).view(1, -1)
    return (d >= 0) & (d < window)


def sliding_window_attention(q, k, v, window, attention_mask=None):
    T, D = q.size(-2), q.size(-1)
    bias = torch.zeros(T, T, dtype=q.dtype, device=q.device).masked_fill(~sliding_window_mask(T, window, q.device), float("-inf"))
    s = torch.einsum("...qd,...kd->...qk", q, k) / math.sqrt(D) + bias
    if attention_mask is not None:
        s = s.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
    return torch.einsum("...qk,...kd->...qd", torch.softmax(s, -1), v)
