# attnprep: sliding_window
# expect: mask_leak
# diagnosis: window_off_by_one + padding_mask_on_queries
"""The band built from torch.tril_indices twice (the lower triangle, minus the entries further back
than the window), written into a zero bool matrix by index_put. Two slips, one per function: the
second tril_indices uses offset -window-1 where -window belongs, so window + 1 keys are kept; and
the padding mask is broadcast over the query rows."""

import math

import torch


def sliding_window_mask(seq_len, window, device=None):
    lower = torch.tril_indices(seq_len, seq_len, device=device)
    too_far = torch.tril_indices(seq_len, seq_len, offset=-window - 1, device=device)
    m = torch.zeros(seq_len, seq_len, dtype=torch.bool, device=device)
    m = m.index_put((lower[0], lower[1]), torch.tensor(True, device=device))
    return m.index_put((too_far[0], too_far[1]), torch.tensor(False, device=device))


def sliding_window_attention(q, k, v, window, attention_mask=None):
    T, D = q.shape[-2], q.shape[-1]
    scores = q @ k.transpose(-2, -1) / math.sqrt(D)
    allowed = sliding_window_mask(T, window, q.device)
    if attention_mask is not None:
        allowed = allowed & attention_mask[:, None, :, None]
    return scores.masked_fill(~allowed, float("-inf")).softmax(-1) @ v
# bug-line: 16, 27
