# attnprep: sliding_window
# expect: mask_leak
# diagnosis: window_off_by_one
"""Causal first, then carve: the causal triangle as one tril, then the keys too far back found as
coordinates of a lower triangle shifted down (torch.tril_indices with a negative offset) and
switched off with index_put; the key padding mask joined with `&`. The shift is 1 - window where
-window belongs, so only window - 1 keys stay (the key exactly window - 1 back is dropped)."""

import math

import torch


def sliding_window_mask(seq_len, window, device=None):
    allowed = torch.ones(seq_len, seq_len, dtype=torch.bool, device=device).tril()
    far = torch.tril_indices(seq_len, seq_len, offset=1 - window, device=device)
    off = torch.zeros((), dtype=torch.bool, device=device)
    return allowed.index_put(tuple(far), off)


def sliding_window_attention(q, k, v, window, attention_mask=None):
    D = q.size(-1)
    allowed = sliding_window_mask(q.size(-2), window, q.device)
    if attention_mask is not None:
        allowed = allowed & attention_mask.bool()[:, None, None, :]
    scores = torch.einsum("bhqd,bhkd->bhqk", q, k).div(math.sqrt(D))
    return torch.einsum("bhqk,bhkd->bhqd", scores.masked_fill(~allowed, -torch.inf).softmax(-1), v)
# bug-line: 16
