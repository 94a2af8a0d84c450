# attnprep: sliding_window
# expect: mask_leak
# diagnosis: window_not_causal
"""An enum.StrEnum of mask kinds ("window", "causal_window", "full") chosen by a module-level
default; the band built from the absolute distance |i - j| < window when the kind is "window", and
the default kind is that symmetric one."""
import enum
import math

import torch


class MaskKind(enum.StrEnum):
    FULL = "full"
    WINDOW = "window"
    CAUSAL_WINDOW = "causal_window"


DEFAULT_KIND = MaskKind.WINDOW


def sliding_window_mask(seq_len, window, device=None, kind=DEFAULT_KIND):
    i = torch.arange(seq_len, device=device)[:, None]
    j = torch.arange(seq_len, device=device)[None, :]
    if kind == MaskKind.FULL:
        return torch.ones(seq_len, seq_len, dtype=torch.bool, device=device)
    if kind == MaskKind.WINDOW:
        return (i - j).abs() < window
    return (j <= i) & (i - j < window)


def sliding_window_attention(q, k, v, window, attention_mask=None):
    T, D = q.shape[-2], q.shape[-1]
    scores = q @ k.transpose(-1, -2) / math.sqrt(D)
    allowed = sliding_window_mask(T, window, device=q.device)
    if attention_mask is not None:
        allowed = allowed & attention_mask[:, None, None, :]
    scores = scores.masked_fill(~allowed, float("-inf"))
    return scores.softmax(dim=-1) @ v
# bug-line: 19
