# attnprep: attention_backward
# expect: wrong_output
# diagnosis: backward_scale_missing + backward_causal_mask_ignored
"""ggml's backward names (ggml_soft_max_ext_back, kq, kq_scale, grad) and one function per op; two
slips: the recomputed kq goes through the softmax without the causal mask (the forward had it), and
the chain rule through kq * kq_scale is dropped from dq and dk."""

import math

import torch


def ggml_soft_max_ext_back(grad, y):
    return y * (grad - (grad * y).sum(-1, keepdim=True))


def attention_backward(q, k, v, dout, is_causal=False):
    n_q, n_kv, n_embd_head = q.shape[-2], k.shape[-2], q.shape[-1]
    kq_scale = 1.0 / math.sqrt(n_embd_head)
    kq = torch.matmul(q, k.transpose(-1, -2)) * kq_scale
    kq_mask = torch.zeros(n_q, n_kv, device=q.device, dtype=q.dtype)
    if is_causal:
        kq_mask = kq_mask.masked_fill(torch.ones(n_q, n_kv, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    kq_soft = torch.softmax(kq, dim=-1)
    grad_v = torch.matmul(kq_soft.transpose(-1, -2), dout)
    grad_kq_soft = torch.matmul(dout, v.transpose(-1, -2))
    grad_kq = ggml_soft_max_ext_back(grad_kq_soft, kq_soft)
    grad_q = torch.matmul(grad_kq, k)
    grad_k = torch.matmul(grad_kq.transpose(-1, -2), q)
    return grad_q, grad_k, grad_v
# bug-line: 24, 27
