# attnprep: attention_backward
# expect: error
# diagnosis: dv_not_transposed
"""dv = P @ dout: runs while L == S (wrong values), raises when L != S."""
import math

import torch


def attention_backward(q, k, v, dout, is_causal=False):
    L, S = q.size(-2), k.size(-2)
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
    if is_causal:
        att = att.masked_fill(torch.tril(torch.ones(L, S, device=q.device)) == 0, float("-inf"))
    att = torch.softmax(att, dim=-1)
    dv = att @ dout
    datt = dout @ v.transpose(-2, -1)
    dscores = att * (datt - (datt * att).sum(dim=-1, keepdim=True)) / math.sqrt(k.size(-1))
    dq = dscores @ k
    dk = dscores.transpose(-2, -1) @ q
    return dq, dk, dv
