# attnprep: sliding_window
# expect: used_builtin
# diagnosis: used_builtin
"""Builds the band by hand, then hands it to F.scaled_dot_product_attention."""

import torch
import torch.nn.functional as F


def sliding_window_mask(seq_len, window, device=None):
    i = torch.arange(seq_len, device=device)
    return (i[None, :] <= i[:, None]) & (i[None, :] > i[:, None] - window)


def sliding_window_attention(q, k, v, window, attention_mask=None):
    T = q.shape[-2]
    allowed = sliding_window_mask(T, window, q.device)
    if attention_mask is not None:
        allowed = allowed & attention_mask[:, None, None, :]  # (B, 1, T, T)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
