# attnprep: sliding_window
# expect: passed
"""Correct: a FlexAttention-like mask_mod closure over the window, finfo.min fill, softmax in float32."""
import math
import torch


def sliding_window_causal(window):
    def mask_mod(b, h, q_idx, kv_idx):
        causal = q_idx >= kv_idx
        in_window = q_idx - kv_idx < window
        return causal & in_window
    return mask_mod


def sliding_window_mask(seq_len, window, device=None):
    idx = torch.arange(seq_len, device=device)
    return sliding_window_causal(window)(0, 0, idx.unsqueeze(-1), idx.unsqueeze(0))


def sliding_window_attention(q, k, v, window, attention_mask=None):
    B, H, T, D = q.shape
    mod = sliding_window_causal(window)
    idx = torch.arange(T, device=q.device)
    keep = mod(None, None, idx[:, None], idx[None, :])[None, None]  # (1, 1, T, T)
    if attention_mask is not None:
        keep = keep & attention_mask.bool().unsqueeze(1).unsqueeze(2)
    w = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(D)
    w = w.masked_fill(~keep, torch.finfo(w.dtype).min)
    return torch.matmul(torch.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype), v)
