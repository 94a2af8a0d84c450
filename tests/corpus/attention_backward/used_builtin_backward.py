# attnprep: attention_backward
# expect: used_builtin
# diagnosis: used_builtin
"""out.backward(dout) on copies that require gradients, then their .grad."""
import math

import torch


def attention_backward(q, k, v, dout, is_causal=False):
    q = q.clone().requires_grad_(True)
    k = k.clone().requires_grad_(True)
    v = v.clone().requires_grad_(True)
    with torch.set_grad_enabled(True):
        att = q @ k.transpose(-2, -1) * (1.0 / math.sqrt(k.size(-1)))
        if is_causal:
            L, S = att.shape[-2:]
            att = att.masked_fill(torch.tril(torch.ones(L, S, device=q.device)) == 0, float("-inf"))
        (att.softmax(-1) @ v).backward(dout)
    return q.grad, k.grad, v.grad
