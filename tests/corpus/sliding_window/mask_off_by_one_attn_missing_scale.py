# attnprep: sliding_window
# expect: mask_leak
# diagnosis: missing_scale + window_off_by_one
"""Two objects, two mistakes: sliding_window_mask lets window + 1 keys through (i - j <= window) AND sliding_window_attention forgets the scale."""

import torch


def sliding_window_mask(seq_len: int, window: int, device=None) -> torch.Tensor:
    q_idx = torch.arange(seq_len, device=device)[:, None]
    kv_idx = torch.arange(seq_len, device=device)[None, :]
    return (kv_idx <= q_idx) & (q_idx - kv_idx <= window)


def sliding_window_attention(q, k, v, window, attention_mask=None):
    T = q.shape[-2]
    scores = q @ k.transpose(-1, -2)
    keep = sliding_window_mask(T, window, q.device)
    if attention_mask is not None:
        keep = keep & attention_mask[:, None, None, :]
    scores = torch.where(keep, scores, float("-inf"))
    return scores.softmax(dim=-1) @ v
# bug-line: 12, 17
