# attnprep: attention_backward
# expect: error
# diagnosis: dk_not_transposed
"""A Fortran programmer's explicit transposes (.mT on every operand that is read by columns), the
forward recomputed, dP and dS named as in the paper."""
import math

import torch


def attention_backward(q, k, v, dout, is_causal=False):
    L, S, D = q.shape[-2], k.shape[-2], q.shape[-1]
    scale = 1.0 / math.sqrt(D)
    s = (q @ k.mT) * scale  # (L, S)
    if is_causal:
        s = s.masked_fill(torch.ones(L, S, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    p = torch.softmax(s, dim=-1)
    dv = p.mT @ dout  # (S, D)
    dp = dout @ v.mT  # (L, S)
    ds = p * (dp - (dp * p).sum(dim=-1, keepdim=True))
    dq = (ds @ k) * scale  # (L, D)
    dk = (ds @ q) * scale
    return dq, dk, dv
# bug-line: 22
