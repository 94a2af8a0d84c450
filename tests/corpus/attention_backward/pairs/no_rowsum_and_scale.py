# attnprep: attention_backward
# expect: wrong_output
# diagnosis: backward_scale_missing + softmax_backward_no_rowsum
"""Two mistakes: dS = P ⊙ dP (no row sum), and no scale on dq and dk."""
import math

import torch


def attention_backward(q, k, v, dout, is_causal=False):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if is_causal:
        s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool, device=q.device).tril().logical_not(), float("-inf"))
    p = torch.softmax(s, dim=-1)
    dv = p.transpose(-2, -1) @ dout
    ds = p * (dout @ v.transpose(-2, -1))
    return ds @ k, ds.transpose(-2, -1) @ q, dv
