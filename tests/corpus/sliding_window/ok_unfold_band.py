# attnprep: sliding_window
# expect: passed
"""Longformer-ish banded form: keys left-padded by window - 1 and unfolded into (B, H, T, D, w)
windows, scores only over the band (B, H, T, w); slots before position 0 and padded keys masked."""
import math

import torch
import torch.nn.functional as F


def sliding_window_mask(seq_len, window, device=None):
    i = torch.arange(seq_len, device=device).unsqueeze(1)
    j = torch.arange(seq_len, device=device).unsqueeze(0)
    return (j <= i) & (j > i - window)


def sliding_window_attention(q, k, v, window, attention_mask=None):
    B, H, T, D = q.shape
    w = min(window, T)
    kp = F.pad(k, (0, 0, w - 1, 0)).unfold(2, w, 1)  # (B, H, T, D, w)
    vp = F.pad(v, (0, 0, w - 1, 0)).unfold(2, w, 1)
    scores = torch.einsum("bhtd,bhtdw->bhtw", q, kp) / math.sqrt(D)
    key_pos = torch.arange(T, device=q.device)[:, None] - (w - 1) + torch.arange(w, device=q.device)
    valid = (key_pos >= 0)[None, None]  # (1, 1, T, w)
    if attention_mask is not None:
        am = F.pad(attention_mask, (w - 1, 0), value=False).unfold(1, w, 1)  # (B, T, w)
        valid = valid & am[:, None]
    scores = scores.masked_fill(~valid, float("-inf"))
    p = scores.softmax(dim=-1)
    return torch.einsum("bhtw,bhtdw->bhtd", p, vp)
