# attnprep: sliding_window
# expect: passed
"""Correct, interview-note style: einsum, a 'blocked' mask (future | too far back) filled with -1e9,
nn.Softmax; the mask function returns its complement."""

import torch
import torch.nn as nn


def sliding_window_mask(seq_len, window, device=None):
    future = torch.triu(torch.ones(seq_len, seq_len, device=device, dtype=torch.bool), diagonal=1)
    too_old = torch.tril(torch.ones(seq_len, seq_len, device=device, dtype=torch.bool), diagonal=-window)
    return ~(future | too_old)


def sliding_window_attention(q, k, v, window, attention_mask=None):
    d = q.size(-1)
    s = torch.einsum("bhid,bhjd->bhij", q, k) / d ** 0.5
    blocked = ~sliding_window_mask(q.size(-2), window, q.device)
    s = s.masked_fill(blocked, -1e9)
    if attention_mask is not None:
        s = s.masked_fill(attention_mask[:, None, None, :] == 0, -1e9)
    p = nn.Softmax(dim=-1)(s)
    return torch.einsum("bhij,bhjd->bhid", p, v)
