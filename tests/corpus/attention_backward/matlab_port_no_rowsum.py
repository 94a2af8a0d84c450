# attnprep: attention_backward
# expect: wrong_output
# diagnosis: softmax_backward_no_rowsum
"""A MATLAB user's port: helper names from MATLAB (ctranspose, rowsum, zeros_like), one 2-D slice
(L x D) at a time in explicit loops over batch and heads, `P .* (dP - ...)` written as in the notes."""
import math

import torch


def ctranspose(A):
    return A.transpose(-1, -2)


def rowsum(A):
    return A.sum(dim=-1, keepdim=True)


def attention_backward(q, k, v, dout, is_causal=False):
    nb, nh, L, D = q.shape
    S = k.shape[2]
    s = 1 / math.sqrt(D)
    dq = torch.zeros_like(q)
    dk = torch.zeros_like(k)
    dv = torch.zeros_like(v)
    for b in range(nb):
        for h in range(nh):
            Q, K, V, dO = q[b, h], k[b, h], v[b, h], dout[b, h]
            Sc = s * Q @ ctranspose(K)
            if is_causal:
                Sc = Sc.masked_fill(torch.triu(torch.ones(L, S, dtype=torch.bool, device=q.device), 1), -math.inf)
            Sc = Sc - Sc.max(dim=-1, keepdim=True).values
            P = torch.exp(Sc)
            P = P / rowsum(P)
            dv[b, h] = ctranspose(P) @ dO
            dP = dO @ ctranspose(V)
            dS = P * dP
            dq[b, h] = s * dS @ K
            dk[b, h] = s * ctranspose(dS) @ Q
    return dq, dk, dv
# bug-line: 37
