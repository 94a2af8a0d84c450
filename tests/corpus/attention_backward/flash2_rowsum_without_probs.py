# attnprep: attention_backward
# expect: wrong_output
"""FlashAttention-2 backward notation (D_i = rowsum(dO ⊙ O) would be right); here rowsum(dP) is used,
without the ⊙ P."""

import math

import torch


def attention_backward(q, k, v, dout, is_causal=False):
    L, S, d = q.shape[-2], k.shape[-2], q.shape[-1]
    softmax_scale = 1.0 / math.sqrt(d)
    S_ij = torch.matmul(q, k.transpose(-1, -2)) * softmax_scale
    if is_causal:
        S_ij = S_ij.masked_fill(torch.ones(L, S, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    P_ij = torch.softmax(S_ij, dim=-1)
    dV = torch.matmul(P_ij.transpose(-1, -2), dout)
    dP_ij = torch.matmul(dout, v.transpose(-1, -2))
    D_i = dP_ij.sum(dim=-1, keepdim=True)
    dS_ij = P_ij * (dP_ij - D_i)
    dQ = torch.matmul(dS_ij, k) * softmax_scale
    dK = torch.matmul(dS_ij.transpose(-1, -2), q) * softmax_scale
    return dQ, dK, dV
# bug-line: 20
