# attnprep: sliding_window
# expect: mask_leak
# diagnosis: window_not_causal + missing_scale
"""Two objects, a mistake in each, Mistral-flavoured: the mask is a symmetric band |i - j| < window
(the future inside the window is visible), and the attention never divides by sqrt(D)."""
import torch


def sliding_window_mask(seq_len, window, device=None):
    idx = torch.arange(seq_len, device=device)
    return (idx[:, None] - idx[None, :]).abs() < window


def sliding_window_attention(q, k, v, window, attention_mask=None):
    T = q.shape[-2]
    scores = torch.einsum("bhid,bhjd->bhij", q, k)
    allowed = sliding_window_mask(T, window, q.device)
    if attention_mask is not None:
        allowed = allowed & attention_mask[:, None, None, :]
    scores = scores.masked_fill(~allowed, torch.finfo(scores.dtype).min)
    return torch.einsum("bhij,bhjd->bhid", scores.softmax(-1), v)
# bug-line: 11, 16
