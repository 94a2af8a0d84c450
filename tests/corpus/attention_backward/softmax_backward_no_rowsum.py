# attnprep: attention_backward
# expect: wrong_output
# diagnosis: softmax_backward_no_rowsum
"""The softmax's gradient taken as P ⊙ dP (the diagonal of the Jacobian only), in a head loop."""
import math

import torch


def attention_backward(q, k, v, dout, is_causal=False):
    B, H, L, D = q.shape
    S = k.shape[2]
    dq, dk, dv = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
    keep = torch.ones(L, S, dtype=torch.bool, device=q.device).tril()
    for b in range(B):
        for h in range(H):
            s = q[b, h] @ k[b, h].T / math.sqrt(D)
            if is_causal:
                s = s.masked_fill(~keep, float("-inf"))
            p = torch.softmax(s, dim=-1)
            dv[b, h] = p.T @ dout[b, h]
            dp = dout[b, h] @ v[b, h].T
            ds = p * dp  # softmax'(x) = p (1 - p) ... on the diagonal only
            dq[b, h] = ds @ k[b, h] / math.sqrt(D)
            dk[b, h] = ds.T @ q[b, h] / math.sqrt(D)
    return dq, dk, dv
# bug-line: 23
