# attnprep: sliding_window
# expect: mask_leak
# diagnosis: window_not_causal + padding_mask_inverted
"""numpy first: the band is built with np.abs / np.arange and handed over with torch.from_numpy."""
import math

import numpy as np
import torch


def sliding_window_mask(seq_len, window, device=None):
    i = np.arange(seq_len)[:, None]
    j = np.arange(seq_len)[None, :]
    band = np.abs(i - j) < window
    return torch.from_numpy(band).to(device)


def sliding_window_attention(q, k, v, window, attention_mask=None):
    B, H, T, D = q.shape
    scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(D)
    ok = sliding_window_mask(T, window, q.device)[None, None]
    if attention_mask is not None:
        pad = attention_mask.cpu().numpy()[:, None, None, :]  # (B, 1, 1, T), True = real token
        ok = ok & torch.from_numpy(pad).to(q.device).logical_not()
    scores = scores.masked_fill(~ok, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v
# bug-line: 14, 24
