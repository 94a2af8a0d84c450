# attnprep: sliding_window
# expect: passed
"""Correct, Hugging Face style: arange comparison (kv_idx > q_idx - sliding_window on top of causal),
an additive float mask of finfo.min built with torch.where, softmax in float32."""

import torch
from torch import nn


def sliding_window_mask(seq_len, window, device=None):
    q_idx = torch.arange(seq_len, device=device)[:, None]
    kv_idx = torch.arange(seq_len, device=device)[None, :]
    return (kv_idx <= q_idx) & (kv_idx > q_idx - window)


def sliding_window_attention(q, k, v, window, attention_mask=None):
    bsz, num_heads, q_len, head_dim = q.size()
    scaling = head_dim ** -0.5
    allowed = sliding_window_mask(q_len, window, device=q.device)[None, None, :, :]  # (1, 1, T, T)
    if attention_mask is not None:
        allowed = allowed & attention_mask.bool()[:, None, None, :]  # (B, 1, T, T)
    min_value = torch.finfo(q.dtype).min
    causal_mask = torch.where(allowed, torch.zeros((), dtype=q.dtype, device=q.device), min_value)
    attn_weights = torch.matmul(q, k.transpose(2, 3)) * scaling
    attn_weights = attn_weights + causal_mask
    attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(q.dtype)
    return torch.matmul(attn_weights, v)
