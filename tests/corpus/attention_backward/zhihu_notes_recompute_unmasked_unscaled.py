# attnprep: attention_backward
# expect: wrong_output
# diagnosis: backward_causal_mask_ignored + backward_scale_missing
"""知乎「FlashAttention 反向手推」笔记风格：先写出 dV = Pᵀ dO、dP = dO Vᵀ、dS = P ⊙ (dP − D)，
D = rowsum(dO ⊙ O)（FlashAttention-2 的写法），再链式法则到 dQ、dK。Two slips: P is recomputed
without the causal mask (the is_causal argument is never read in the backward), and the chain rule
through scores = q kᵀ / sqrt(d) forgets the 1/sqrt(d) in dq and dk."""

import math

import torch


def attention_backward(q, k, v, dout, is_causal=False):
    d = q.shape[-1]
    # 前向重算：S = Q Kᵀ / √d，P = softmax(S)
    S = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d)
    P = torch.softmax(S, dim=-1)
    O = torch.matmul(P, v)
    # 反向
    dV = torch.matmul(P.transpose(-2, -1), dout)  # dV = Pᵀ dO
    dP = torch.matmul(dout, v.transpose(-2, -1))  # dP = dO Vᵀ
    Drow = (dout * O).sum(dim=-1, keepdim=True)  # D = rowsum(dO ⊙ O)
    dS = P * (dP - Drow)
    dQ = torch.matmul(dS, k)  # dQ = dS K
    dK = torch.matmul(dS.transpose(-2, -1), q)  # dK = dSᵀ Q
    return dQ, dK, dV
# bug-line: 18, 24, 25, 26
