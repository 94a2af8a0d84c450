# attnprep: attention_backward
# expect: wrong_output
# diagnosis: backward_scale_missing + backward_causal_mask_ignored
"""Every product an einsum with letters picked to avoid b/h/i/j (z = batch, y = head, m / n = query /
key position, f = feature), the forward recomputed from the same strings, `blocked` built up front."""
import math

import torch


def attention_backward(q, k, v, dout, is_causal=False):
    f = q.shape[-1]
    m, n = q.shape[-2], k.shape[-2]
    tau = f ** -0.5
    blocked = torch.ones(m, n, dtype=torch.bool, device=q.device).triu(1) if is_causal else None
    logits = torch.einsum("zymf,zynf->zymn", q, k) * tau
    P = logits.softmax(dim=-1)
    dV = torch.einsum("zymn,zymf->zynf", P, dout)
    dP = torch.einsum("zymf,zynf->zymn", dout, v)
    dLogits = P * (dP - (dP * P).sum(-1, keepdim=True))
    dQ = torch.einsum("zymn,zynf->zymf", dLogits, k)
    dK = torch.einsum("zymn,zymf->zynf", dLogits, q)
    return dQ, dK, dV
# bug-line: 17, 21, 22
