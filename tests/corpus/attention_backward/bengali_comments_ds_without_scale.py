# attnprep: attention_backward
# expect: wrong_output
# diagnosis: backward_scale_missing
"""বাংলা মন্তব্য (Bengali comments), as a Bengali study group writes the backward pass: the
probabilities recomputed, dS from the row sums, and the scale that the forward used forgotten on dS."""
import math

import torch


def attention_backward(q, k, v, dout, is_causal=False):
    # আকার: q (B, H, L, D), k ও v (B, H, S, D)
    L, S, D = q.shape[-2], k.shape[-2], q.shape[-1]
    scale = D ** -0.5  # সামনের ধাপের একই স্কেল
    s = torch.matmul(q, k.transpose(-1, -2)) * scale  # স্কোর আবার গণনা
    if is_causal:
        bhobishyot = torch.ones(L, S, dtype=torch.bool, device=q.device).triu(1)  # ভবিষ্যতের কী
        s = s.masked_fill(bhobishyot, float("-inf"))
    p = torch.softmax(s, dim=-1)  # সম্ভাবনা P
    dv = torch.matmul(p.transpose(-1, -2), dout)  # dV = Pᵀ dO
    dp = torch.matmul(dout, v.transpose(-1, -2))  # dP = dO Vᵀ
    sari = (dp * p).sum(-1, keepdim=True)  # প্রতি সারির যোগফল
    ds = p * (dp - sari)
    dq = torch.matmul(ds, k)  # dQ = dS K
    dk = torch.matmul(ds.transpose(-1, -2), q)  # dK = dSᵀ Q
    return dq, dk, dv
# bug-line: 23
