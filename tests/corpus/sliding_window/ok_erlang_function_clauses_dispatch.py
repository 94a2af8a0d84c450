# attnprep: sliding_window
# expect: passed
"""An Erlang programmer's function clauses: each helper dispatches on the shape of its arguments
through an ordered list of (guard, body) pairs, first match wins, and the last clause is a catch-all
(`_ ->`); atoms spelled as strings ('ok', 'none')."""
import math

import torch


def clauses(*pairs):
    def dispatch(*args):
        for guard, body in pairs:
            if guard(*args):
                return body(*args)
        raise ValueError("no clause matched")
    return dispatch


window_band = clauses(
    (lambda i, j, w: w <= 0, lambda i, j, w: torch.zeros_like(i - j, dtype=torch.bool)),
    (lambda i, j, w: True, lambda i, j, w: (j <= i) & (j > i - w)),
)


def sliding_window_mask(seq_len, window, device=None):
    i = torch.arange(seq_len, device=device).unsqueeze(1)
    j = torch.arange(seq_len, device=device).unsqueeze(0)
    return window_band(i, j, window)


key_padding = clauses(
    (lambda allowed, mask: mask is None, lambda allowed, mask: allowed),
    (lambda allowed, mask: True, lambda allowed, mask: allowed & mask.bool()[:, None, None, :]),
)


def sliding_window_attention(q, k, v, window, attention_mask=None):
    T, D = q.shape[-2], q.shape[-1]
    scores = torch.einsum("bhid,bhjd->bhij", q, k) / math.sqrt(D)
    allowed = key_padding(sliding_window_mask(T, window, device=q.device), attention_mask)
    scores = scores.masked_fill(allowed.logical_not(), -1e9)
    return torch.einsum("bhij,bhjd->bhid", scores.softmax(-1), v)
