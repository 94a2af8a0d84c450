# attnprep: sliding_window
# expect: wrong_output
"""baddbmm over (B*H) but q flattened after a transpose to (B, T, H, D): heads and tokens mixed."""
import math

import torch


def sliding_window_mask(seq_len, window, device=None):
    pos = torch.arange(seq_len, device=device)
    dist = pos.view(-1, 1) - pos.view(1, -1)
    return (dist >= 0) & (dist < window)


def sliding_window_attention(q, k, v, window, attention_mask=None):
    B, H, T, D = q.shape
    q2 = q.transpose(1, 2).reshape(B * H, T, D)
    k2 = k.reshape(B * H, T, D)
    v2 = v.reshape(B * H, T, D)
    buf = torch.empty(B * H, T, T, dtype=q.dtype, device=q.device)
    s = torch.baddbmm(buf, q2, k2.transpose(1, 2), beta=0.0, alpha=1.0 / math.sqrt(D))
    s = s.view(B, H, T, T)
    keep = sliding_window_mask(T, window, q.device)[None, None]
    if attention_mask is not None:
        keep = keep & attention_mask.view(B, 1, 1, T)
    s = torch.where(keep, s, torch.finfo(s.dtype).min)
    p = s.softmax(-1).view(B * H, T, T)
    return torch.bmm(p, v2).view(B, H, T, D)
# bug-line: 17
