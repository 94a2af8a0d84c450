# attnprep: sliding_window
# expect: mask_leak
# diagnosis: window_off_by_one
"""The FlexAttention sliding-window recipe in eager torch: a causal mask_mod and a window mask_mod
joined by and_masks, evaluated on a (q_idx, kv_idx) grid; the attention applies the grid."""
import math

import torch


def and_masks(*mods):
    def joined(q_idx, kv_idx):
        out = torch.ones_like(q_idx >= kv_idx)
        for mod in mods:
            out = out & mod(q_idx, kv_idx)
        return out
    return joined


def causal_mod(q_idx, kv_idx):
    return q_idx >= kv_idx


def make_window_mod(window):
    def window_mod(q_idx, kv_idx):
        return q_idx - kv_idx <= window
    return window_mod


def sliding_window_mask(seq_len, window, device=None):
    idx = torch.arange(seq_len, device=device)
    return and_masks(causal_mod, make_window_mod(window))(idx[:, None], idx[None, :])


def sliding_window_attention(q, k, v, window, attention_mask=None):
    B, H, T, D = q.shape
    keep = sliding_window_mask(T, window, device=q.device)[None, None]
    if attention_mask is not None:
        keep = keep & attention_mask[:, None, None, :]
    scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(D)
    probs = scores.masked_fill(~keep, float("-inf")).softmax(-1)
    return torch.einsum("bhqk,bhkd->bhqd", probs, v)
# bug-line: 26
