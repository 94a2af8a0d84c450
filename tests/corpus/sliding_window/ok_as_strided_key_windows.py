# attnprep: sliding_window
# expect: passed
"""Key windows by torch.as_strided on a left-padded copy of k and v (no (T, T) scores): window w of
query i is rows i .. i + window - 1 of the padded tensor, i.e. keys i - window + 1 .. i; the dense mask
function is the same band written with two comparisons."""
import math

import torch
import torch.nn.functional as F


def sliding_window_mask(seq_len, window, device=None):
    i = torch.arange(seq_len, device=device)[:, None]
    j = torch.arange(seq_len, device=device)[None, :]
    return (j <= i) & (j > i - window)


def _windows(t, window):
    # t (B, H, T, D) -> (B, H, T, window, D) over a copy padded with window - 1 zero rows in front
    B, H, T, D = t.shape
    padded = F.pad(t, (0, 0, window - 1, 0)).contiguous()
    sB, sH, sT, sD = padded.stride()
    return padded.as_strided((B, H, T, window, D), (sB, sH, sT, sT, sD))


def sliding_window_attention(q, k, v, window, attention_mask=None):
    B, H, T, D = q.shape
    kw, vw = _windows(k, window), _windows(v, window)
    scores = (q.unsqueeze(-2) * kw).sum(-1) / math.sqrt(D)                    # (B, H, T, window)
    key_idx = torch.arange(T, device=q.device)[:, None] + torch.arange(window, device=q.device)[None, :] - (window - 1)
    ok = (key_idx >= 0).expand(B, 1, T, window)
    if attention_mask is not None:
        real = F.pad(attention_mask, (window - 1, 0), value=False)           # (B, T + window - 1)
        ok = ok & real.unfold(1, window, 1)[:, None]
    scores = scores.masked_fill(~ok, float("-inf"))
    return (scores.softmax(-1).unsqueeze(-1) * vw).sum(-2)
