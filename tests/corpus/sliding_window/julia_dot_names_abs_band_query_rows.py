# attnprep: sliding_window
# expect: mask_leak
# diagnosis: window_not_causal + padding_mask_on_queries
"""Julia broadcasting habits: element-wise helpers named after Julia's dotted operators (dot_minus
for .-, dot_lt for .<, dot_and for .&) applied to a row vector and a column vector; the band used
abs.(i .- j) (both sides of the diagonal), and the padding mask was broadcast along the queries."""
import math

import torch


def dot_minus(a, b):
    return a - b


def dot_lt(a, b):
    return a < b


def dot_and(a, b):
    return a & b


def col(v):
    return v[:, None]


def row(v):
    return v[None, :]


def sliding_window_mask(seq_len, window, device=None):
    r = torch.arange(seq_len, device=device)
    gap = dot_minus(col(r), row(r))  # i .- j
    return dot_lt(gap.abs(), window)


def sliding_window_attention(q, k, v, window, attention_mask=None):
    B, H, T, D = q.shape
    scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(D)
    ok = sliding_window_mask(T, window, device=q.device)
    if attention_mask is not None:
        ok = dot_and(ok, attention_mask[:, None, :, None])
    scores = scores.masked_fill(~ok, float("-inf"))
    return torch.matmul(torch.softmax(scores, dim=-1), v)
# bug-line: 35, 43
