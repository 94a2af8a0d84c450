# attnprep: attention_backward
# expect: error
# diagnosis: dk_not_transposed
"""FlashAttention-2 style with D = rowsum(dO ⊙ O), but dK = dS Q: raises as soon as L != S."""
import math

import torch


def attention_backward(q, k, v, dout, is_causal=False):
    scale = 1 / math.sqrt(q.shape[-1])
    S = q @ k.mT * scale
    if is_causal:
        n, m = S.shape[-2:]
        S = S.masked_fill(torch.ones(n, m, dtype=torch.bool, device=S.device).triu(1), -float("inf"))
    P = S.softmax(-1)
    O = P @ v
    Di = (dout * O).sum(-1, keepdim=True)
    dV = P.mT @ dout
    dP = dout @ v.mT
    dS = P * (dP - Di)
    dQ = dS @ k * scale
    dK = dS @ q * scale
    return dQ, dK, dV
# bug-line: 23
