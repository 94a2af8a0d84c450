# attnprep: sliding_window
# expect: passed
"""Correct: keys left-padded with F.pad by window-1 and unfolded into per-query windows (Longformer-ish), padding
mask unfolded the same way; the mask function from torch.ones().tril() minus tril(-window)."""
import math
import torch
import torch.nn.functional as F


def sliding_window_mask(seq_len, window, device=None):
    ones = torch.ones(seq_len, seq_len, dtype=torch.bool, device=device)
    return torch.tril(ones) & ~torch.tril(ones, diagonal=-window)


def sliding_window_attention(q, k, v, window, attention_mask=None):
    B, H, T, D = q.shape
    W = window
    kp = F.pad(k, (0, 0, W - 1, 0))                      # (B, H, T+W-1, D)
    vp = F.pad(v, (0, 0, W - 1, 0))
    kw = kp.unfold(2, W, 1).transpose(-1, -2)            # (B, H, T, W, D): keys i-W+1 .. i
    vw = vp.unfold(2, W, 1).transpose(-1, -2)
    real = torch.ones(B, T, dtype=torch.bool, device=q.device) if attention_mask is None else attention_mask
    rp = F.pad(real, (W - 1, 0), value=False)            # keys before position 0 are not real
    rw = rp.unfold(1, W, 1)                              # (B, T, W)
    s = torch.einsum("bhtd,bhtwd->bhtw", q, kw) / math.sqrt(D)
    s = s.masked_fill(~rw[:, None], float("-inf"))
    p = s.softmax(-1)
    return torch.einsum("bhtw,bhtwd->bhtd", p, vw)
