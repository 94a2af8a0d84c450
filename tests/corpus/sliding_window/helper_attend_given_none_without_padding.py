# attnprep: sliding_window
# expect: mask_leak
# diagnosis: causal_ignored
"""One private `_attend(q, k, v, allowed=None)` shared by both branches of the public function (with
and without a padding mask), the way a small library factors its code; the band from the mask
function, combined with the padding when there is one."""
import math

import torch


def sliding_window_mask(seq_len, window, device=None):
    pos = torch.arange(seq_len, device=device)
    diff = pos[:, None] - pos[None, :]
    return (diff >= 0) & (diff < window)


def _attend(q, k, v, allowed=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if allowed is not None:
        scores = scores.masked_fill(~allowed, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def sliding_window_attention(q, k, v, window, attention_mask=None):
    T = q.size(-2)
    band = sliding_window_mask(T, window, device=q.device)
    if attention_mask is not None:
        return _attend(q, k, v, band & attention_mask[:, None, None, :])
    return _attend(q, k, v, None)
# bug-line: 30
