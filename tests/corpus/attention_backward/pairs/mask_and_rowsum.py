# attnprep: attention_backward
# expect: wrong_output
# diagnosis: backward_causal_mask_ignored + softmax_backward_no_rowsum
"""Two mistakes: P recomputed without the causal mask, and dS = P ⊙ dP without the row sum."""
import math

import torch


def attention_backward(q, k, v, dout, is_causal=False):
    B, H, L, D = q.shape
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    for h in range(H):  # one head at a time, batched over B
        qh, kh, vh, doh = q[:, h], k[:, h], v[:, h], dout[:, h]
        p = torch.softmax(qh @ kh.transpose(1, 2) / math.sqrt(D), dim=-1)  # (B, L, S)
        dv[:, h] = p.transpose(1, 2) @ doh
        ds = p * (doh @ vh.transpose(1, 2)) / math.sqrt(D)
        dq[:, h] = ds @ kh
        dk[:, h] = ds.transpose(1, 2) @ qh
    return dq, dk, dv
