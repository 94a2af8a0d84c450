# attnprep: attention_backward
# expect: error
# diagnosis: dv_not_transposed
"""Interview notes, terse: one-letter names (s, p, o, g for dout), `@` and `.mT` only, the softmax
recomputed inline, the row-sum term as (g·o) summed over D as FlashAttention-2's backward writes
it (rowsum(dO ∘ O) equals rowsum(dP ∘ P)). dv is p @ g, without p's transpose: it raises when
L != S and is wrong when L == S."""

import math

import torch


def attention_backward(q, k, v, dout, is_causal=False):
    g = dout
    c = 1 / math.sqrt(q.shape[-1])
    s = q @ k.mT * c
    if is_causal:
        L, S = s.shape[-2:]
        s = s.masked_fill(torch.ones(L, S, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    p = (s - s.amax(-1, keepdim=True)).exp()
    p = p / p.sum(-1, keepdim=True)
    o = p @ v
    dv = p @ g
    dp = g @ v.mT
    r = (g * o).sum(-1, keepdim=True)
    ds = p * (dp - r) * c
    dq = ds @ k
    dk = ds.mT @ q
    return dq, dk, dv
# bug-line: 24
