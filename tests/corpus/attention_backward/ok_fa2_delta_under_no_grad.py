# attnprep: attention_backward
# expect: passed
"""Correct: FlashAttention-2's backward written densely under @torch.no_grad(): P recomputed from the log-sum-exp, D = rowsum(dO * O) in place of rowsum(dP * P)."""
import math

import torch


@torch.no_grad()
def attention_backward(q, k, v, dout, is_causal=False):
    """FlashAttention-2's backward written densely: recompute P from the log-sum-exp, D = rowsum(dO ∘ O)."""
    scale = 1.0 / math.sqrt(q.shape[-1])
    s = torch.matmul(q, k.transpose(-2, -1)) * scale
    if is_causal:
        L, S = s.shape[-2:]
        s = s.masked_fill(torch.ones(L, S, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    m = s.amax(-1, keepdim=True)
    lse = m + torch.log(torch.exp(s - m).sum(-1, keepdim=True))
    p = torch.exp(s - lse)
    o = p @ v
    delta = (dout * o).sum(-1, keepdim=True)        # = rowsum(dP ∘ P)
    dv = p.transpose(-2, -1) @ dout
    dp = dout @ v.transpose(-2, -1)
    ds = p * (dp - delta)
    dq = ds @ k * scale
    dk = ds.transpose(-2, -1) @ q * scale
    return dq, dk, dv
