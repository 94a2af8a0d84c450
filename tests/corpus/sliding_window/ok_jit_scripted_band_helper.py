# attnprep: sliding_window
# expect: passed
"""Correct: the mask from a @torch.jit.script helper given the device; window and padding as additive float biases."""
import math
from typing import Optional

import torch


@torch.jit.script
def _band(seq_len: int, window: int, device: Optional[torch.device] = None) -> torch.Tensor:
    i = torch.arange(seq_len, device=device).unsqueeze(1)
    j = torch.arange(seq_len, device=device).unsqueeze(0)
    return (j <= i) & (i - j < window)


def sliding_window_mask(seq_len, window, device=None):
    return _band(seq_len, window, device)


def sliding_window_attention(q, k, v, window, attention_mask=None):
    T, D = q.shape[-2], q.shape[-1]
    bias = torch.zeros(T, T, dtype=q.dtype, device=q.device).masked_fill(~sliding_window_mask(T, window, q.device), float("-inf"))
    if attention_mask is not None:
        bias = bias + torch.zeros_like(attention_mask, dtype=q.dtype).masked_fill(~attention_mask, float("-inf"))[:, None, None, :]
    w = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(D) + bias, dim=-1)
    return w @ v
