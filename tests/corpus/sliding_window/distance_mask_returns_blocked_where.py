# attnprep: sliding_window
# expect: mask_leak
# diagnosis: window_mask_inverted
"""Distance-matrix style: the mask helper returns where i - j falls outside [0, window) (the blocked
keys), and the attention keeps the scores where the helper says True, as the contract's allowed."""
import math

import torch


def sliding_window_mask(seq_len, window, device=None):
    i = torch.arange(seq_len, device=device)[:, None]
    j = torch.arange(seq_len, device=device)[None, :]
    dist = i - j
    return (dist < 0) | (dist >= window)


def sliding_window_attention(q, k, v, window, attention_mask=None):
    batch, heads, seq, dim = q.shape
    logits = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(dim)
    keep = sliding_window_mask(seq, window, device=q.device)[None, None]
    if attention_mask is not None:
        keep = keep & attention_mask[:, None, None, :].bool()
    logits = torch.where(keep, logits, torch.finfo(logits.dtype).min)
    return torch.einsum("bhqk,bhkd->bhqd", logits.softmax(dim=-1), v)
# bug-line: 15
