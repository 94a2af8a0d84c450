# attnprep: attention_backward
# expect: passed
"""FlashAttention-2's backward (Algorithm 2) written naively, without tiles: P is recomputed from
the saved log-sum-exp, and the row term is D = rowsum(dO ⊙ O), not rowsum(dP ⊙ P) (they are equal)."""
import math

import torch


def _forward(q, k, v, is_causal):
    """The forward pass as the kernel runs it: returns O and the log-sum-exp L of each row."""
    scale = 1.0 / math.sqrt(q.shape[-1])
    s = torch.matmul(q, k.transpose(-1, -2)) * scale
    if is_causal:
        n_q, n_k = s.shape[-2], s.shape[-1]
        future = torch.arange(n_k, device=q.device)[None, :] > torch.arange(n_q, device=q.device)[:, None]
        s = s.masked_fill(future, float("-inf"))
    m = s.amax(dim=-1, keepdim=True)
    lse = m + torch.log(torch.exp(s - m).sum(dim=-1, keepdim=True))
    o = torch.matmul(torch.exp(s - lse), v)
    return o, lse


def attention_backward(q, k, v, dout, is_causal=False):
    softmax_scale = q.shape[-1] ** -0.5
    o, lse = _forward(q, k, v, is_causal)
    # D_i = rowsum(dO_i * O_i), computed once before the loop over key blocks
    D = (dout * o).sum(dim=-1, keepdim=True)
    s = torch.matmul(q, k.transpose(-1, -2)) * softmax_scale
    if is_causal:
        n_q, n_k = s.shape[-2], s.shape[-1]
        future = torch.arange(n_k, device=q.device)[None, :] > torch.arange(n_q, device=q.device)[:, None]
        s = s.masked_fill(future, float("-inf"))
    p = torch.exp(s - lse)  # P_ij = exp(S_ij - L_i)
    dv = torch.matmul(p.transpose(-1, -2), dout)  # dV = P^T dO
    dp = torch.matmul(dout, v.transpose(-1, -2))  # dP = dO V^T
    ds = p * (dp - D)  # dS = P ∘ (dP - D)
    dq = torch.matmul(ds, k) * softmax_scale  # dQ = dS K
    dk = torch.matmul(ds.transpose(-1, -2), q) * softmax_scale  # dK = dS^T Q
    return dq, dk, dv
