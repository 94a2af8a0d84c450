# attnprep: attention_backward
# expect: error
# diagnosis: tensor_without_device
"""The causal mask made with torch.ones(L, S): on the CPU whatever the inputs' device."""
import math

import torch


def attention_backward(q, k, v, dout, is_causal=False):
    L, S = q.size(-2), k.size(-2)
    scale = 1.0 / math.sqrt(q.size(-1))
    scores = q @ k.transpose(-2, -1) * scale
    if is_causal:
        scores = scores.masked_fill(torch.ones(L, S).tril() == 0, float("-inf"))
    p = torch.softmax(scores, dim=-1)
    dv = p.transpose(-2, -1) @ dout
    dp = dout @ v.transpose(-2, -1)
    ds = p * (dp - (dp * p).sum(-1, keepdim=True)) * scale
    return ds @ k, ds.transpose(-2, -1) @ q, dv
