# attnprep: attention_backward
# expect: passed
"""Correct: FlashAttention-2's D = rowsum(dO * O) instead of rowsum(dP * P) (equal: dP·P summed =
dO·(P V)), everything on (B*H, L, D) via math.prod and torch.bmm with .mT, the causal mask as an
additive -inf bias, the probabilities by a hand softmax."""

import math

import torch


def attention_backward(q, k, v, dout, is_causal=False):
    *lead, L, D = q.shape
    S = k.shape[-2]
    n = math.prod(lead)
    Q, K, V, dO = q.reshape(n, L, D), k.reshape(n, S, D), v.reshape(n, S, D), dout.reshape(n, L, D)
    scale = 1.0 / math.sqrt(D)
    s = torch.bmm(Q, K.mT) * scale
    if is_causal:
        s = s + torch.full((L, S), float("-inf"), device=q.device, dtype=q.dtype).triu(1)
    e = torch.exp(s - s.amax(-1, keepdim=True))
    P = e / e.sum(-1, keepdim=True)
    O = torch.bmm(P, V)
    dV = torch.bmm(P.mT, dO)
    dP = torch.bmm(dO, V.mT)
    Dsum = (dO * O).sum(-1, keepdim=True)
    dS = P * (dP - Dsum)
    dQ = torch.bmm(dS, K) * scale
    dK = torch.bmm(dS.mT, Q) * scale
    shape = lambda t, r: t.view(*lead, r, D)
    return shape(dQ, L), shape(dK, S), shape(dV, S)
