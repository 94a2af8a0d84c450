# attnprep: attention_backward
# expect: wrong_output
# diagnosis: softmax_backward_no_rowsum
"""Paddle habits (paddle.matmul(x, y, transpose_y=True) as a helper, transpose with perm lists);
the softmax's backward is written as dS = P * dP, the elementwise part only: the rowsum(dP * P)
term of the Jacobian is missing."""

import math

import torch


def matmul(x, y, transpose_x=False, transpose_y=False):
    if transpose_x:
        x = x.permute(0, 1, 3, 2)
    if transpose_y:
        y = y.permute(0, 1, 3, 2)
    return torch.matmul(x, y)


def attention_backward(q, k, v, dout, is_causal=False):
    L, S, D = q.shape[2], k.shape[2], q.shape[3]
    scale = 1.0 / math.sqrt(D)
    product = matmul(q, k, transpose_y=True) * scale
    if is_causal:
        mask = torch.ones(L, S, dtype=torch.bool, device=q.device).tril()
        product = torch.where(mask, product, torch.full_like(product, float("-inf")))
    weights = torch.exp(product - product.amax(-1, keepdim=True))
    weights = weights / weights.sum(-1, keepdim=True)
    dv = matmul(weights, dout, transpose_x=True)
    dweights = matmul(dout, v, transpose_y=True)
    dproduct = weights * dweights
    dq = matmul(dproduct, k) * scale
    dk = matmul(dproduct, q, transpose_x=True) * scale
    return dq, dk, dv
# bug-line: 32
