# attnprep: sliding_window
# expect: mask_leak
# diagnosis: window_off_by_one
"""torch.where masks from index comparisons; the window test is `i - j <= window`, which lets one
key too many in (window + 1 keys)."""

import math

import torch


def sliding_window_mask(seq_len: int, window: int, device=None) -> torch.Tensor:
    i = torch.arange(seq_len, device=device).view(-1, 1)
    j = torch.arange(seq_len, device=device).view(1, -1)
    causal = j <= i
    in_window = (i - j) <= window
    return causal & in_window


def sliding_window_attention(q, k, v, window, attention_mask=None):
    T, D = q.shape[-2], q.shape[-1]
    logits = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(D)
    allowed = sliding_window_mask(T, window, q.device)
    if attention_mask is not None:
        allowed = torch.logical_and(allowed, attention_mask[:, None, None, :].bool())
    logits = torch.where(allowed, logits, torch.finfo(logits.dtype).min)
    return torch.einsum("bhqk,bhkd->bhqd", logits.softmax(-1), v)
# bug-line: 16
