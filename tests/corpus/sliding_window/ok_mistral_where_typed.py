# attnprep: sliding_window
# expect: passed
"""Mistral's condition (kv_idx > q_idx - sliding_window, kv_idx <= q_idx), typed, torch.where with
finfo.min, the key padding mask folded in with a broadcast AND."""

from typing import Optional

import torch
from torch import Tensor


def sliding_window_mask(seq_len: int, window: int, device: Optional[torch.device] = None) -> Tensor:
    q_idx = torch.arange(seq_len, device=device)[:, None]
    kv_idx = torch.arange(seq_len, device=device)[None, :]
    return (kv_idx <= q_idx) & (kv_idx > q_idx - window)


def sliding_window_attention(q: Tensor, k: Tensor, v: Tensor, window: int,
                             attention_mask: Optional[Tensor] = None) -> Tensor:
    scores = torch.einsum("bhid,bhjd->bhij", q, k) / q.shape[-1] ** 0.5
    allowed = sliding_window_mask(q.shape[2], window, q.device)[None, None]
    if attention_mask is not None:
        allowed = allowed & attention_mask[:, None, None, :].bool()
    scores = torch.where(allowed, scores, torch.finfo(scores.dtype).min)
    return torch.einsum("bhij,bhjd->bhid", scores.softmax(-1), v)
