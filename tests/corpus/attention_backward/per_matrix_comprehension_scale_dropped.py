# attnprep: attention_backward
# expect: wrong_output
# diagnosis: backward_scale_missing
"""Everything on 2-D matrices: the batch and head dims flattened away, one small function per
(L, D) problem, list comprehensions over the flattened problems and torch.stack back; the forward
recomputed inside the per-matrix function, the chain rule written as separate named steps."""
import math

import torch


def one_problem(q, k, v, do, causal):
    L, S = q.shape[0], k.shape[0]
    c = 1.0 / math.sqrt(q.shape[1])
    s = (q @ k.T) * c
    if causal:
        s = s.masked_fill(torch.ones(L, S, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    p = torch.softmax(s, dim=1)
    dv = p.T @ do
    dp = do @ v.T
    ds = p * (dp - (dp * p).sum(1, keepdim=True))
    dq = ds @ k
    dk = ds.T @ q
    return dq, dk, dv


def attention_backward(q, k, v, dout, is_causal=False):
    lead = q.shape[:-2]
    flat = lambda t: t.reshape(-1, t.shape[-2], t.shape[-1])
    results = [one_problem(a, b, c, d, is_causal) for a, b, c, d in zip(flat(q), flat(k), flat(v), flat(dout))]
    dq, dk, dv = (torch.stack(parts).reshape(*lead, *parts[0].shape) for parts in zip(*results))
    return dq, dk, dv
# bug-line: 22, 23
