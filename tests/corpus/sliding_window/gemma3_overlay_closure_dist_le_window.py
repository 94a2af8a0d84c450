# attnprep: sliding_window
# expect: mask_leak
# diagnosis: window_off_by_one
"""Gemma-3's mask functions: `causal_mask_function` and a `sliding_window_overlay(sliding_window)`
closure over (batch_idx, head_idx, q_idx, kv_idx), combined by an `and_masks` helper and evaluated
on broadcast index tensors; the layer's window taken from a `layer_types` pattern."""
import math

import torch


def and_masks(*fns):
    def combined(b, h, q_idx, kv_idx):
        out = fns[0](b, h, q_idx, kv_idx)
        for fn in fns[1:]:
            out = out & fn(b, h, q_idx, kv_idx)
        return out
    return combined


def causal_mask_function(batch_idx, head_idx, q_idx, kv_idx):
    return kv_idx <= q_idx


def sliding_window_overlay(sliding_window):
    def inner(batch_idx, head_idx, q_idx, kv_idx):
        return q_idx - kv_idx <= sliding_window
    return inner


def sliding_window_mask(seq_len, window, device=None):
    idx = torch.arange(seq_len, device=device)
    fn = and_masks(causal_mask_function, sliding_window_overlay(window))
    return fn(None, None, idx[:, None], idx[None, :])


def sliding_window_attention(q, k, v, window, attention_mask=None):
    B, H, T, D = q.shape
    mask = sliding_window_mask(T, window, device=q.device)
    if attention_mask is not None:
        mask = mask & attention_mask[:, None, None, :]
    w = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(D)
    w = w.masked_fill(~mask, torch.finfo(w.dtype).min)
    return torch.einsum("bhqk,bhkd->bhqd", torch.softmax(w, dim=-1), v)
# bug-line: 27
