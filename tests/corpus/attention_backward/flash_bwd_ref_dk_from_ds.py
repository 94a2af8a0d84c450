# attnprep: attention_backward
# expect: error
# diagnosis: dk_not_transposed
"""FlashAttention-2's backward written as its reference: recompute P from the saved lse, D = rowsum(dO * O)."""
import math

import torch


def attention_backward(q, k, v, dout, is_causal=False):
    softmax_scale = 1.0 / math.sqrt(q.shape[-1])
    seqlen_q, seqlen_k = q.shape[-2], k.shape[-2]
    S = torch.matmul(q, k.transpose(-1, -2)) * softmax_scale
    if is_causal:
        S = S.masked_fill(torch.ones(seqlen_q, seqlen_k, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    lse = torch.logsumexp(S, dim=-1, keepdim=True)  # saved by the forward pass
    P = torch.exp(S - lse)
    O = P @ v
    D = (dout * O).sum(-1, keepdim=True)  # rowsum(dO * O) == rowsum(dP * P)
    dV = P.transpose(-1, -2) @ dout
    dP = dout @ v.transpose(-1, -2)
    dS = P * (dP - D)
    dQ = dS @ k * softmax_scale
    dK = dS @ q * softmax_scale
    return dQ, dK, dV
# bug-line: 24
