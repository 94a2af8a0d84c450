# attnprep: sliding_window
# expect: mask_leak
# diagnosis: window_not_causal + padding_mask_ignored
"""Pure-Python mask: a nested list comprehension of booleans turned into a tensor, the window
condition written as one chained comparison; the attention an interview-notes function with an
assert on every shape."""
import math

import torch


def sliding_window_mask(seq_len, window, device=None):
    rows = [[abs(i - j) < window for j in range(seq_len)] for i in range(seq_len)]
    return torch.tensor(rows, dtype=torch.bool, device=device).reshape(seq_len, seq_len)


def sliding_window_attention(q, k, v, window, attention_mask=None):
    B, H, T, D = q.shape
    assert k.shape == (B, H, T, D) and v.shape == (B, H, T, D)
    assert attention_mask is None or attention_mask.shape == (B, T)
    band = sliding_window_mask(T, window, device=q.device)
    assert band.shape == (T, T)
    s = q @ k.transpose(-1, -2) / math.sqrt(D)
    assert s.shape == (B, H, T, T)
    s = s.masked_fill(~band, float("-inf"))
    p = s.softmax(dim=-1)
    return p @ v
# bug-line: 13, 25
