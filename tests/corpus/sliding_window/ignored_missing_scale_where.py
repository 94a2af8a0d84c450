# attnprep: sliding_window
# expect: mask_leak
# diagnosis: window_ignored + missing_scale
"""sliding_window_mask returns the plain causal mask (window unused), and the scores are not scaled."""
import torch


def sliding_window_mask(seq_len, window, device=None):
    return torch.ones(seq_len, seq_len, dtype=torch.bool, device=device).tril()


def sliding_window_attention(q, k, v, window, attention_mask=None):
    s = q @ k.transpose(-2, -1)
    ok = sliding_window_mask(q.size(-2), window, q.device)
    if attention_mask is not None:
        ok = ok & attention_mask[:, None, None, :]
    s = torch.where(ok, s, torch.finfo(s.dtype).min)
    return s.softmax(-1) @ v
