# attnprep: attention_backward
# expect: wrong_output
# diagnosis: backward_scale_missing
"""einsum; the scores are scaled, but the chain rule forgets the scale on the way back to q and k."""
import math

import torch


def attention_backward(q, k, v, dout, is_causal=False):
    scale = q.shape[-1] ** -0.5
    s = torch.einsum("bhqd,bhkd->bhqk", q, k) * scale
    if is_causal:
        L, S = s.shape[-2:]
        s = s.masked_fill(torch.triu(torch.ones(L, S, dtype=torch.bool, device=q.device), 1), float("-inf"))
    p = torch.softmax(s, -1)
    dv = torch.einsum("bhqk,bhqd->bhkd", p, dout)
    dp = torch.einsum("bhqd,bhkd->bhqk", dout, v)
    ds = p * (dp - (p * dp).sum(-1, keepdim=True))
    dq = torch.einsum("bhqk,bhkd->bhqd", ds, k)
    dk = torch.einsum("bhqk,bhqd->bhkd", ds, q)
    return dq, dk, dv
# bug-line: 20, 21
