# attnprep: sliding_window
# expect: mask_leak
# diagnosis: window_off_by_one + missing_scale
"""Scan style: the mask is filled one query row at a time from its start index; the start is i - window
(one key too many), and the scores are never divided by sqrt(D)."""

import torch


def sliding_window_mask(seq_len, window, device=None):
    rows = []
    for i in range(seq_len):
        start = max(0, i - window)
        row = torch.zeros(seq_len, dtype=torch.bool, device=device)
        row[start:i + 1] = True
        rows.append(row)
    return torch.stack(rows)


def sliding_window_attention(q, k, v, window, attention_mask=None):
    T = q.size(-2)
    s = q @ k.transpose(-1, -2)
    m = sliding_window_mask(T, window, q.device).expand(q.size(0), 1, T, T)
    if attention_mask is not None:
        m = m & attention_mask[:, None, None, :]
    s = s.masked_fill(m.logical_not(), -1e9)
    return torch.softmax(s, dim=-1) @ v
# bug-line: 13, 22
