# attnprep: attention_backward
# expect: passed
"""Correct: a loop over (batch, head) with 2-D matrices, dS via P * dP - P * rowsum(P * dP) with torch.addcmul,
results written into preallocated tensors."""
import math
import torch


def attention_backward(q, k, v, dout, is_causal=False):
    B, H, L, D = q.shape
    S = k.shape[-2]
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    allowed = torch.ones(L, S, dtype=torch.bool, device=q.device).tril() if is_causal else None
    for b in range(B):
        for h in range(H):
            Q, K, V, dO = q[b, h], k[b, h], v[b, h], dout[b, h]
            s = Q @ K.T / math.sqrt(D)
            if allowed is not None:
                s = s.masked_fill(~allowed, float("-inf"))
            P = torch.softmax(s, dim=1)
            dP = dO @ V.T
            dS = torch.addcmul(P * dP, P, (P * dP).sum(1, keepdim=True), value=-1.0) / math.sqrt(D)
            dq[b, h] = dS @ K
            dk[b, h] = dS.T @ Q
            dv[b, h] = P.T @ dO
    return dq, dk, dv
