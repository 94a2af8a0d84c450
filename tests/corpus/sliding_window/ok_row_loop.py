# attnprep: sliding_window
# expect: passed
"""面经 style: one query row at a time over its own window slice k[:, :, lo:i+1] (no T x T matrix),
padding sliced the same way, results stacked along the token axis."""
import math

import torch
import torch.nn.functional as F


def sliding_window_mask(seq_len, window, device=None):
    m = torch.zeros(seq_len, seq_len, dtype=torch.bool, device=device)
    for i in range(seq_len):
        m[i, max(0, i - window + 1): i + 1] = True
    return m


def sliding_window_attention(q, k, v, window, attention_mask=None):
    T, D = q.size(-2), q.size(-1)
    outs = []
    for i in range(T):
        lo = max(0, i - window + 1)
        kk, vv = k[:, :, lo:i + 1], v[:, :, lo:i + 1]           # (B, H, w, D)
        sc = (q[:, :, i:i + 1] @ kk.transpose(-1, -2)) / D ** 0.5  # (B, H, 1, w)
        if attention_mask is not None:
            sc = sc.masked_fill(~attention_mask[:, lo:i + 1][:, None, None, :], -1e9)
        outs.append(F.softmax(sc, dim=-1) @ vv)
    return torch.cat(outs, dim=2)
