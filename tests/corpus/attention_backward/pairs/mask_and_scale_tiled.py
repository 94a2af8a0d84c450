# attnprep: attention_backward
# expect: wrong_output
# diagnosis: backward_scale_missing + backward_causal_mask_ignored
"""Two mistakes in a tiled FlashAttention-2 backward: the key blocks above the diagonal are not
masked, and dS goes to dq and dk without the softmax scale."""
import math

import torch


def attention_backward(q, k, v, dout, is_causal=False, Bc=3):
    S, D = k.shape[-2], q.shape[-1]
    sm_scale = 1.0 / math.sqrt(D)
    lse = torch.logsumexp(q @ k.transpose(-1, -2) * sm_scale, dim=-1, keepdim=True)
    o = torch.exp(q @ k.transpose(-1, -2) * sm_scale - lse) @ v
    Di = (dout * o).sum(-1, keepdim=True)
    dq, dk, dv = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
    for j in range(0, S, Bc):
        kj, vj = k[..., j:j + Bc, :], v[..., j:j + Bc, :]
        pij = torch.exp(q @ kj.transpose(-1, -2) * sm_scale - lse)
        dv[..., j:j + Bc, :] = pij.transpose(-1, -2) @ dout
        dsij = pij * (dout @ vj.transpose(-1, -2) - Di)
        dq += dsij @ kj
        dk[..., j:j + Bc, :] = dsij.transpose(-1, -2) @ q
    return dq, dk, dv
