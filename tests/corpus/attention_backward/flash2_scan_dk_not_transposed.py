# attnprep: attention_backward
# expect: error
# diagnosis: dk_not_transposed
"""FlashAttention-2 backward's formulas in one pass (D_i = rowsum(dO ∘ O) first, then dS); dk is taken
as dS @ q where dSᵀ @ q is meant."""

import math

import torch


def attention_backward(q, k, v, dout, is_causal=False):
    L, S, D = q.shape[-2], k.shape[-2], q.shape[-1]
    softmax_scale = 1 / math.sqrt(D)
    s = torch.einsum("bhld,bhsd->bhls", q, k) * softmax_scale
    if is_causal:
        s = s.masked_fill(torch.ones(L, S, dtype=torch.bool, device=q.device).triu(1), -math.inf)
    p = torch.softmax(s, dim=-1)
    o = torch.einsum("bhls,bhsd->bhld", p, v)
    delta = (dout * o).sum(-1, keepdim=True)  # D_i
    dv = torch.einsum("bhls,bhld->bhsd", p, dout)
    dp = torch.einsum("bhld,bhsd->bhls", dout, v)
    ds = p * (dp - delta) * softmax_scale
    dq = torch.einsum("bhls,bhsd->bhld", ds, k)
    dk = ds @ q
    return dq, dk, dv
# bug-line: 25
