# attnprep: sliding_window
# expect: mask_leak
# diagnosis: window_not_causal + missing_scale
"""|i - j| < window (a symmetric band: future keys inside the window are seen) and the scores are
never scaled."""

import torch


def sliding_window_mask(seq_len, window, device=None):
    i = torch.arange(seq_len, device=device)
    return (i[:, None] - i[None, :]).abs() < window


def sliding_window_attention(q, k, v, window, attention_mask=None):
    s = torch.einsum("bhid,bhjd->bhij", q, k)
    m = sliding_window_mask(q.shape[-2], window, q.device)
    if attention_mask is not None:
        m = m & attention_mask[:, None, None, :]
    s = s.masked_fill(~m, float("-inf"))
    return torch.einsum("bhij,bhjd->bhid", s.softmax(-1), v)
