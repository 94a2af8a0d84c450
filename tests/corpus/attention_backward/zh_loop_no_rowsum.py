# attnprep: attention_backward
# expect: wrong_output
# diagnosis: softmax_backward_no_rowsum
# The mistake: dS = P ⊙ dP, the softmax backward without the row-sum term.
# 逐头循环：重新计算概率，dP = dout·vᵀ，dS = P ⊙ (dP − rowsum(dP ⊙ P))，再乘缩放。
import math
import torch


def attention_backward(q, k, v, dout, is_causal=False):
    B, H, L, D = q.shape
    S = k.shape[2]
    缩放 = 1.0 / math.sqrt(D)
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    for h in range(H):
        qh, kh, vh, gh = q[:, h], k[:, h], v[:, h], dout[:, h]  # (B, L, D) / (B, S, D)
        分数 = torch.einsum("bld,bsd->bls", qh, kh) * 缩放
        if is_causal:
            分数 = 分数.masked_fill(torch.ones(L, S, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
        分数 = 分数 - 分数.max(-1, keepdim=True).values
        P = 分数.exp()
        P = P / P.sum(-1, keepdim=True)
        dv[:, h] = torch.einsum("bls,bld->bsd", P, gh)
        dP = torch.einsum("bld,bsd->bls", gh, vh)
        dS = P * dP
        dq[:, h] = torch.einsum("bls,bsd->bld", dS, kh) * 缩放
        dk[:, h] = torch.einsum("bls,bld->bsd", dS, qh) * 缩放
    return dq, dk, dv
# bug-line: 25
