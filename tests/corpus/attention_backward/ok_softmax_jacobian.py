# attnprep: attention_backward
# expect: passed
"""The softmax Jacobian written out explicitly, J = diag(p) - p pᵀ for every row (interview-notes
style: correct, but O(S²) memory per row)."""
import math

import torch


def softmax_backward(p, dp):
    # p, dp: (..., S); J[..., a, b] = p_a (δ_ab - p_b)
    J = torch.diag_embed(p) - p.unsqueeze(-1) * p.unsqueeze(-2)  # (..., S, S)
    return (J @ dp.unsqueeze(-1)).squeeze(-1)  # J is symmetric: Jᵀ dp = J dp


def attention_backward(q, k, v, dout, is_causal=False):
    d = q.shape[-1]
    scores = q @ k.transpose(-2, -1) / math.sqrt(d)
    if is_causal:
        causal = torch.ones(scores.shape[-2:], dtype=torch.bool, device=scores.device).tril()
        scores = scores.masked_fill(causal.logical_not(), float("-inf"))
    p = torch.softmax(scores, dim=-1)
    dv = p.transpose(-2, -1) @ dout
    dp = dout @ v.transpose(-2, -1)
    dscores = softmax_backward(p, dp) / math.sqrt(d)
    dq = dscores @ k
    dk = dscores.transpose(-2, -1) @ q
    return dq, dk, dv
