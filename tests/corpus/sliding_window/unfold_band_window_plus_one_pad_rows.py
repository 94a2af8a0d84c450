# attnprep: sliding_window
# expect: mask_leak
# diagnosis: window_off_by_one + padding_mask_on_queries
"""The band built from torch.Tensor.unfold: key positions padded on the left by F.pad and unfolded
into windows of `window + 1` per query (the author counted the query itself twice), compared with a
scatter into a (T, T) mask; the padding mask applied through torch.where. Two slips: each query
sees window + 1 keys (i - window <= j), and the padding mask is laid on the query rows."""

import math

import torch
import torch.nn.functional as F


def sliding_window_mask(seq_len, window, device=None):
    idx = torch.arange(seq_len, device=device)
    padded = F.pad(idx, (window, 0), value=-1)
    wins = padded.unfold(0, window + 1, 1)  # (T, window + 1): the keys of each query, -1 = none
    mask = torch.zeros(seq_len, seq_len + 1, dtype=torch.bool, device=device)
    mask.scatter_(1, torch.where(wins < 0, seq_len, wins), True)
    return mask[:, :seq_len]


def sliding_window_attention(q, k, v, window, attention_mask=None):
    T = q.shape[-2]
    keep = sliding_window_mask(T, window, q.device)[None, None]
    if attention_mask is not None:
        keep = keep & attention_mask[:, None, :, None]
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    s = torch.where(keep, s, torch.tensor(-math.inf, device=s.device, dtype=s.dtype))
    return s.softmax(-1) @ v
# bug-line: 17, 18, 28
