# attnprep: sliding_window
# expect: mask_leak
# diagnosis: window_not_causal + scale_by_dim
"""Memoised masks: functools.lru_cache on (seq_len, window) returning the band as nested tuples of
Python bools, made a tensor per call on the device asked for; attention chained on the tensors."""
from functools import lru_cache

import torch


@lru_cache(maxsize=64)
def _band(seq_len, window):
    return tuple(tuple(abs(i - j) < window for j in range(seq_len)) for i in range(seq_len))


def sliding_window_mask(seq_len, window, device=None):
    return torch.tensor(_band(seq_len, window), dtype=torch.bool, device=device)


def sliding_window_attention(q, k, v, window, attention_mask=None):
    B, H, T, D = q.shape
    keep = sliding_window_mask(T, window, q.device).view(1, 1, T, T)
    if attention_mask is not None:
        keep = keep.logical_and(attention_mask.view(B, 1, 1, T))
    s = q.matmul(k.transpose(-2, -1)).div(D)
    return s.masked_fill(keep.logical_not(), float("-inf")).softmax(-1).matmul(v)
# bug-line: 13, 25
