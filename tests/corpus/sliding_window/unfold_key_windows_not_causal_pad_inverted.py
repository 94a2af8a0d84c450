# attnprep: sliding_window
# expect: mask_leak
# diagnosis: window_not_causal + padding_mask_inverted
"""Longformer-flavoured: the attention never builds a (T, T) score matrix, each query gets its own
window of keys by padding the key axis and Tensor.unfold (B, H, T, window, D); the mask helper is the
dense (T, T) version for callers that want one, used to check the band."""
import math

import torch


def sliding_window_mask(seq_len, window, device=None):
    i = torch.arange(seq_len, device=device).unsqueeze(1)
    j = torch.arange(seq_len, device=device).unsqueeze(0)
    return (i - j).abs() < window


def sliding_window_attention(q, k, v, window, attention_mask=None):
    B, H, T, D = q.shape
    pad = window - 1
    k_pad = torch.nn.functional.pad(k, (0, 0, pad, 0))                 # (B, H, T + pad, D)
    v_pad = torch.nn.functional.pad(v, (0, 0, pad, 0))
    k_win = k_pad.unfold(2, window, 1).transpose(-1, -2)               # (B, H, T, window, D): keys i - pad .. i
    v_win = v_pad.unfold(2, window, 1).transpose(-1, -2)
    scores = torch.einsum("bhtd,bhtwd->bhtw", q, k_win) / math.sqrt(D)  # (B, H, T, window)

    key_pos = torch.arange(T, device=q.device)[:, None] - pad + torch.arange(window, device=q.device)[None, :]
    valid = key_pos >= 0                                               # (T, window): not the left padding
    if attention_mask is not None:
        real = torch.nn.functional.pad(attention_mask, (pad, 0), value=False)   # (B, T + pad)
        real_win = real.unfold(1, window, 1)                                      # (B, T, window)
        valid = valid & ~real_win[:, None]
    scores = scores.masked_fill(~valid, float("-inf"))
    probs = scores.softmax(dim=-1)
    return torch.einsum("bhtw,bhtwd->bhtd", probs, v_win)
# bug-line: 15, 32
