# attnprep: attention_backward
# expect: wrong_output
# diagnosis: causal_flag_inverted
"""`if not is_causal:`: the mask is applied exactly when full attention was asked for."""
import math

import torch


def attention_backward(q, k, v, dout, is_causal=False):
    L, S, D = q.shape[-2], k.shape[-2], q.shape[-1]
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(D)
    if not is_causal:
        scores = scores.masked_fill(torch.tril(torch.ones(L, S, device=q.device)) == 0, float("-inf"))
    p = torch.softmax(scores, dim=-1)
    dv = torch.matmul(p.transpose(-2, -1), dout)
    dp = torch.matmul(dout, v.transpose(-2, -1))
    ds = p * (dp - torch.sum(dp * p, dim=-1, keepdim=True)) / math.sqrt(D)
    return torch.matmul(ds, k), torch.matmul(ds.transpose(-2, -1), q), dv
