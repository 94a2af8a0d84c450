# attnprep: attention_backward
# expect: error
# diagnosis: dv_not_transposed + causal_flag_inverted
"""A C programmer's habits: every result buffer allocated up front with torch.empty and filled
through out= (torch.matmul(a, b, out=buf), torch.mul(..., out=...)), UPPER_CASE constants, an int
flag tested as `if (!is_causal)`, the whole body under torch.no_grad (a backward by hand needs no
graph); dv from P instead of Pᵀ, and the causal mask applied when is_causal is False."""
import math

import torch


def attention_backward(q, k, v, dout, is_causal=False):
    L, S, D = q.shape[-2], k.shape[-2], q.shape[-1]
    BATCH = q.shape[:-2]
    SCALE = 1.0 / math.sqrt(D)
    with torch.no_grad():
        P = torch.empty(*BATCH, L, S, dtype=q.dtype, device=q.device)
        DP = torch.empty(*BATCH, L, S, dtype=q.dtype, device=q.device)
        DQ = torch.empty_like(q)
        DK = torch.empty_like(k)
        DV = torch.empty_like(v)
        torch.matmul(q, k.transpose(-2, -1), out=P)
        torch.mul(P, SCALE, out=P)
        if not is_causal:  # if (!is_causal) ... mask the future
            P.masked_fill_(torch.ones(L, S, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
        P.copy_(torch.softmax(P, dim=-1))
        torch.matmul(P, dout, out=DV)
        torch.matmul(dout, v.transpose(-2, -1), out=DP)
        ROW = (DP * P).sum(dim=-1, keepdim=True)
        DS = P * (DP - ROW) * SCALE
        torch.matmul(DS, k, out=DQ)
        torch.matmul(DS.transpose(-2, -1), q, out=DK)
    return DQ, DK, DV
# bug-line: 25, 28
