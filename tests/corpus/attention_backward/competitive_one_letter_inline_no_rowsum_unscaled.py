# attnprep: attention_backward
# expect: wrong_output
# diagnosis: softmax_backward_no_rowsum + backward_scale_missing
"""Competitive-programming style: one-letter names, everything inline, a lambda for the transpose,
no comments but the formula on one line."""
import math

import torch


def attention_backward(q, k, v, dout, is_causal=False):
    t = lambda a: a.transpose(-1, -2)
    c = 1 / math.sqrt(q.shape[-1])
    s = q @ t(k) * c
    if is_causal:
        n, m = s.shape[-2:]
        s = s.masked_fill(torch.ones(n, m, dtype=torch.bool, device=q.device).triu(1), -math.inf)
    p = s.softmax(-1)
    g = dout @ t(v)
    d = p * g
    return d @ k, t(d) @ q, t(p) @ dout
# bug-line: 20, 21
