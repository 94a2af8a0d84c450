# attnprep: sliding_window
# expect: passed
"""Correct: the query rows split recursively in halves (divide and conquer), each half against only the keys
it can reach; the mask built by comparing aranges."""
import math
import torch


def sliding_window_mask(seq_len, window, device=None):
    r = torch.arange(seq_len, device=device)
    return (r[None, :] <= r[:, None]) & (r[None, :] > r[:, None] - window)


def _attend(q, k, v, window, real, lo, hi):
    if hi - lo <= 2:
        start = max(0, lo - window + 1)
        s = q[:, :, lo:hi] @ k[:, :, start:hi].transpose(-1, -2) / math.sqrt(q.shape[-1])
        rows = torch.arange(lo, hi, device=q.device)[:, None]
        cols = torch.arange(start, hi, device=q.device)[None, :]
        keep = (cols <= rows) & (cols > rows - window)
        keep = keep & real[:, None, None, start:hi]
        s = s.masked_fill(~keep, float("-inf"))
        return s.softmax(-1) @ v[:, :, start:hi]
    mid = (lo + hi) // 2
    return torch.cat([_attend(q, k, v, window, real, lo, mid), _attend(q, k, v, window, real, mid, hi)], dim=2)


def sliding_window_attention(q, k, v, window, attention_mask=None):
    B, H, T, D = q.shape
    real = attention_mask if attention_mask is not None else torch.ones(B, T, dtype=torch.bool, device=q.device)
    return _attend(q, k, v, window, real, 0, T)
