# attnprep: attention_backward
# expect: wrong_output
# diagnosis: softmax_backward_no_rowsum
"""jax.custom_vjp habits: `_attn_fwd(q, k, v, causal)` returning `(out, residuals)`, `_attn_bwd(
causal, res, g)` returning the cotangents tuple, and `attention_backward` stitching them as
jax.vjp would. The softmax's backward is written as dS = P * dP, without subtracting the row sum
of dP * P."""

import math

import torch


def _attn_fwd(q, k, v, causal):
    D = q.shape[-1]
    s = torch.einsum("bhld,bhsd->bhls", q, k) / math.sqrt(D)
    if causal:
        L, S = s.shape[-2:]
        s = s.masked_fill(torch.ones(L, S, dtype=torch.bool, device=s.device).triu(1), -math.inf)
    p = torch.softmax(s, dim=-1)
    return p @ v, (q, k, v, p)


def _attn_bwd(causal, res, g):
    q, k, v, p = res
    scale = 1.0 / math.sqrt(q.shape[-1])
    dv = torch.einsum("bhls,bhld->bhsd", p, g)
    dp = torch.einsum("bhld,bhsd->bhls", g, v)
    ds = p * dp
    dq = torch.einsum("bhls,bhsd->bhld", ds, k) * scale
    dk = torch.einsum("bhls,bhld->bhsd", ds, q) * scale
    return dq, dk, dv


def attention_backward(q, k, v, dout, is_causal=False):
    _, res = _attn_fwd(q, k, v, is_causal)
    return _attn_bwd(is_causal, res, dout)
# bug-line: 29
