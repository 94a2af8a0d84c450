# attnprep: attention_backward
# expect: passed
"""Recursion over the leading dims: the function calls itself on each slice of the first dim
until only (L, D) matrices are left, then does the 2-D backward; the rowsum term written as
FlashAttention-2's D = rowsum(dout * out)."""
import math

import torch


def attention_backward(q, k, v, dout, is_causal=False):
    if q.dim() > 2:
        parts = [attention_backward(q[i], k[i], v[i], dout[i], is_causal) for i in range(q.shape[0])]
        return tuple(torch.stack(g) for g in zip(*parts))
    L, S = q.shape[0], k.shape[0]
    scale = 1.0 / math.sqrt(q.shape[-1])
    s = q @ k.T * scale
    if is_causal:
        s = s.masked_fill(torch.arange(S, device=q.device)[None, :] > torch.arange(L, device=q.device)[:, None], float("-inf"))
    p = torch.softmax(s, dim=-1)
    out = p @ v
    Drow = (dout * out).sum(-1, keepdim=True)  # (L, 1) = rowsum(dP * P)
    dp = dout @ v.T
    ds = p * (dp - Drow)
    return ds @ k * scale, ds.T @ q * scale, p.T @ dout
