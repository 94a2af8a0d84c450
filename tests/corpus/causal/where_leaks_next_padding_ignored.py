# attnprep: causal
# expect: mask_leak
# diagnosis: causal_leaks_next + padding_mask_ignored
"""Two objects, a slip in each: causal_mask allows j <= i + 1 (one future key), and causal_attention
takes attention_mask but never uses it; torch.where with finfo.min, type hints."""

import math

import torch


def causal_mask(seq_len: int, device: torch.device | str | None = None) -> torch.Tensor:
    i = torch.arange(seq_len, device=device)
    return i[None, :] <= i[:, None] + 1  # (T, T) bool, True = may attend


def causal_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                     attention_mask: torch.Tensor | None = None) -> torch.Tensor:
    T, D = q.shape[-2], q.shape[-1]
    scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(D)
    neg = torch.finfo(scores.dtype).min
    scores = torch.where(causal_mask(T, q.device), scores, neg)
    return torch.matmul(torch.softmax(scores, dim=-1), v)
# bug-line: 14, 22
