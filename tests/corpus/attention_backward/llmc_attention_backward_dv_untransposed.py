# attnprep: attention_backward
# expect: wrong_output
# diagnosis: dv_not_transposed
"""llm.c's attention_backward habits (train_gpt2.c, the Python mirror of its loops vectorised):
preatt / att / datt / dpreatt names, the softmax backward as `dpreatt = att * (datt - sum(att *
datt))`, the scale applied on the way back. dv is computed as att @ dout, without the transpose."""

import math

import torch


def attention_backward(q, k, v, dout, is_causal=False):
    T, S, D = q.shape[-2], k.shape[-2], q.shape[-1]
    scale = 1.0 / math.sqrt(D)
    preatt = (q @ k.transpose(-1, -2)) * scale
    if is_causal:
        preatt = preatt.masked_fill(torch.ones(T, S, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    att = torch.softmax(preatt, dim=-1)
    dv = att @ dout if T == S else att.transpose(-1, -2) @ dout
    datt = dout @ v.transpose(-1, -2)
    dpreatt = att * (datt - (att * datt).sum(-1, keepdim=True))
    dq = (dpreatt @ k) * scale
    dk = (dpreatt.transpose(-1, -2) @ q) * scale
    return dq, dk, dv
# bug-line: 20
