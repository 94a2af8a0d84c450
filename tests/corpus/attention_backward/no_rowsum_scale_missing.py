# attnprep: attention_backward
# expect: wrong_output
# diagnosis: softmax_backward_no_rowsum + backward_scale_missing
"""einsum backward: dS = P ⊙ dP without the row-sum term, and the 1/sqrt(D) never applied to dS (dq
and dk both off by the scale)."""

import math

import torch


def attention_backward(q, k, v, dout, is_causal=False):
    L, S, D = q.shape[-2], k.shape[-2], q.shape[-1]
    s = torch.einsum("bhld,bhsd->bhls", q, k) / math.sqrt(D)
    if is_causal:
        s = torch.where(torch.ones(L, S, dtype=torch.bool, device=q.device).tril(), s, float("-inf"))
    p = torch.softmax(s, dim=-1)
    dv = torch.einsum("bhls,bhld->bhsd", p, dout)
    dp = torch.einsum("bhld,bhsd->bhls", dout, v)
    ds = p * dp
    dq = torch.einsum("bhls,bhsd->bhld", ds, k)
    dk = torch.einsum("bhls,bhld->bhsd", ds, q)
    return dq, dk, dv
