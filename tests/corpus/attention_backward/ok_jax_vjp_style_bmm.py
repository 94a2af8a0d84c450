# attnprep: attention_backward
# expect: passed
"""Written as a JAX-style chain of VJPs, one small function per primitive (matmul, softmax, scale), on
flattened (B*H) batches with torch.bmm: correct."""

import math

import torch


def _matmul_vjp(a, b, g):
    return torch.bmm(g, b.transpose(1, 2)), torch.bmm(a.transpose(1, 2), g)


def _softmax_vjp(p, g):
    return p * (g - (g * p).sum(-1, keepdim=True))


def attention_backward(q, k, v, dout, is_causal=False):
    B, H, L, D = q.shape
    S = k.shape[2]
    qf, kf, vf, gf = (t.reshape(B * H, -1, D) for t in (q, k, v, dout))
    c = 1.0 / math.sqrt(D)
    s = torch.bmm(qf, kf.transpose(1, 2)) * c
    if is_causal:
        s = s.masked_fill(~torch.ones(L, S, dtype=torch.bool, device=q.device).tril(), float("-inf"))
    p = torch.softmax(s, dim=-1)
    dp, dv = _matmul_vjp(p, vf, gf)
    ds = _softmax_vjp(p, dp) * c
    dq, dkT = _matmul_vjp(qf, kf.transpose(1, 2), ds)
    return dq.view(B, H, L, D), dkT.transpose(1, 2).reshape(B, H, S, D), dv.view(B, H, S, D)
