# attnprep: sliding_window
# expect: mask_leak
# diagnosis: window_off_by_one
"""Longformer's habit of a one-sided window: `attention_window` counts the keys before the query, so the
band's span is window + 1 (the query's own key added on top), worked out once and then used in the
triu offset as everywhere else in that codebase. Mask helpers as tensor methods (.tril(), .triu())."""
import math

import torch


def sliding_window_mask(seq_len, window, device=None):
    one_sided = window          # keys before the query, Longformer's attention_window
    span = one_sided + 1        # the query's own key on top
    full = torch.ones(seq_len, seq_len, dtype=torch.bool, device=device)
    return full.tril() & full.triu(diagonal=-(span - 1))


def sliding_window_attention(q, k, v, window, attention_mask=None):
    B, H, T, D = q.shape
    att = q.matmul(k.transpose(-2, -1)).div(math.sqrt(D))
    keep = sliding_window_mask(T, window, device=q.device)
    if attention_mask is not None:
        keep = keep & attention_mask[:, None, None, :]
    att = att.masked_fill(keep.logical_not(), float("-inf"))
    return att.softmax(dim=-1).matmul(v)
# bug-line: 14
