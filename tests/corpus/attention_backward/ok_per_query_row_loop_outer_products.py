# attnprep: attention_backward
# expect: passed
"""Correct: an explicit loop over query rows i (interview whiteboard style): p_i over the allowed
keys (first i+1 under is_causal), dv += p_i^T dout_i via outer products, ds_i = p_i * (dp_i - p_i .
dp_i), dq_i = ds_i k / sqrt(D), dk += ds_i^T q_i / sqrt(D); new_zeros for the accumulators."""

import math

import torch


def attention_backward(q, k, v, dout, is_causal=False):
    L, S, D = q.shape[-2], k.shape[-2], q.shape[-1]
    c = 1.0 / math.sqrt(D)
    dq, dk, dv = q.new_zeros(q.shape), k.new_zeros(k.shape), v.new_zeros(v.shape)
    for i in range(L):
        n = min(i + 1, S) if is_causal else S
        qi = q[..., i, :]  # (B, H, D)
        kk, vv = k[..., :n, :], v[..., :n, :]
        s = torch.einsum("bhd,bhsd->bhs", qi, kk) * c
        p = torch.softmax(s, -1)  # (B, H, n)
        do = dout[..., i, :]  # (B, H, D)
        dv[..., :n, :] += p[..., :, None] * do[..., None, :]
        dp = torch.einsum("bhd,bhsd->bhs", do, vv)
        ds = p * (dp - (p * dp).sum(-1, keepdim=True))
        dq[..., i, :] = torch.einsum("bhs,bhsd->bhd", ds, kk) * c
        dk[..., :n, :] += ds[..., :, None] * qi[..., None, :] * c
    return dq, dk, dv
