# attnprep: attention_backward
# expect: passed
"""A loop over batch and heads with 2-D matrices, as one writes it on a whiteboard."""
import math

import torch


def attention_backward(q, k, v, dout, is_causal=False):
    B, H, L, D = q.shape
    S = k.shape[2]
    dq = torch.zeros_like(q)
    dk = torch.zeros_like(k)
    dv = torch.zeros_like(v)
    mask = torch.tril(torch.ones(L, S, device=q.device)) == 1
    for b in range(B):
        for h in range(H):
            Q, K, V, dO = q[b, h], k[b, h], v[b, h], dout[b, h]  # (L, D), (S, D), (S, D), (L, D)
            scores = Q @ K.T / math.sqrt(D)  # (L, S)
            if is_causal:
                scores = scores.masked_fill(~mask, -1e9)
            P = torch.softmax(scores, dim=-1)
            dv[b, h] = P.T @ dO
            dP = dO @ V.T
            dS = P * (dP - (dP * P).sum(dim=1, keepdim=True))
            dq[b, h] = dS @ K / math.sqrt(D)
            dk[b, h] = dS.T @ Q / math.sqrt(D)
    return dq, dk, dv
