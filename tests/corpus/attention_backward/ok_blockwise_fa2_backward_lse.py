# attnprep: attention_backward
# expect: passed
"""Correct: FlashAttention-2's backward by blocks: a forward pass stores the row log-sum-exp (computed by
hand, running max and sum) and D_i = rowsum(dO ∘ O); then key blocks outer, query blocks inner, P
recomputed from the LSE, dV += Pᵀ dO, dS = P ∘ (dP - D_i), dQ += dS K, dK += dSᵀ Q (scale applied)."""
import math
import torch


def attention_backward(q, k, v, dout, is_causal=False, block=16):
    B, H, L, D = q.shape
    S = k.shape[2]
    scale = 1 / math.sqrt(D)
    s = q @ k.transpose(-1, -2) * scale
    if is_causal:
        s = s.masked_fill(torch.ones(L, S, dtype=torch.bool, device=q.device).triu(1), -math.inf)
    m = s.amax(-1, keepdim=True)
    lse = m + torch.log(torch.exp(s - m).sum(-1, keepdim=True))    # (B, H, L, 1)
    out = torch.exp(s - lse) @ v
    Di = (dout * out).sum(-1, keepdim=True)                         # (B, H, L, 1)
    dq, dk, dv = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
    for j in range(0, S, block):
        kj, vj = k[:, :, j:j + block], v[:, :, j:j + block]
        cols = torch.arange(j, j + kj.shape[2], device=q.device)
        for i in range(0, L, block):
            qi, doi = q[:, :, i:i + block], dout[:, :, i:i + block]
            sij = qi @ kj.transpose(-1, -2) * scale
            if is_causal:
                rows = torch.arange(i, i + qi.shape[2], device=q.device)
                sij = sij.masked_fill(cols[None, :] > rows[:, None], -math.inf)
            pij = torch.exp(sij - lse[:, :, i:i + block])
            dv[:, :, j:j + block] += pij.transpose(-1, -2) @ doi
            dpij = doi @ vj.transpose(-1, -2)
            dsij = pij * (dpij - Di[:, :, i:i + block])
            dq[:, :, i:i + block] += dsij @ kj * scale
            dk[:, :, j:j + block] += dsij.transpose(-1, -2) @ qi * scale
    return dq, dk, dv
