# attnprep: sliding_window
# expect: mask_leak
# diagnosis: window_off_by_one
"""xformers' AttentionBias objects ported: a LowerTriangularMask-like base with materialize(shape,
dtype, device) returning an additive bias, LocalAttentionFromBottomRightMask(window_left,
window_right) for the band, and a key-padding bias composed by addition."""
import math

import torch


class AttentionBias:
    def materialize(self, shape, dtype=torch.float32, device=None):
        raise NotImplementedError

    def keep(self, shape, device=None):
        return self.materialize(shape, device=device) == 0


class LocalAttentionFromBottomRightMask(AttentionBias):
    """Query i sees keys i - window_left .. i + window_right (bottom-right aligned for L == S)."""

    def __init__(self, window_left, window_right=0):
        self.window_left = window_left
        self.window_right = window_right

    def materialize(self, shape, dtype=torch.float32, device=None):
        L, S = shape[-2], shape[-1]
        i = torch.arange(L, device=device)[:, None] + (S - L)
        j = torch.arange(S, device=device)[None, :]
        inside = (j >= i - self.window_left) & (j <= i + self.window_right)
        bias = torch.zeros(L, S, dtype=dtype, device=device)
        return bias.masked_fill(~inside, float("-inf"))


class KeyPaddingBias(AttentionBias):
    def __init__(self, attention_mask):
        self.attention_mask = attention_mask

    def materialize(self, shape, dtype=torch.float32, device=None):
        keep = self.attention_mask[:, None, None, :]
        return torch.zeros(keep.shape, dtype=dtype, device=device).masked_fill(~keep, float("-inf"))


def _band(window):
    return LocalAttentionFromBottomRightMask(window_left=window, window_right=0)


def sliding_window_mask(seq_len, window, device=None):
    return _band(window).keep((seq_len, seq_len), device=device)


def sliding_window_attention(q, k, v, window, attention_mask=None):
    T, D = q.shape[-2], q.shape[-1]
    bias = _band(window).materialize((T, T), dtype=q.dtype, device=q.device)
    if attention_mask is not None:
        bias = bias + KeyPaddingBias(attention_mask).materialize(None, dtype=q.dtype, device=q.device)
    scores = q @ k.transpose(-2, -1) / math.sqrt(D) + bias
    return torch.softmax(scores, dim=-1) @ v
# bug-line: 46
