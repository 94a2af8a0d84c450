# attnprep: causal
# expect: passed
"""Correct, one-function answer with type hints: mask from arange comparison, torch.where with finfo.min, softmax in float32 cast back."""

import math
from typing import Optional

import torch


def causal_mask(seq_len: int, device: Optional[torch.device] = None) -> torch.Tensor:
    idx = torch.arange(seq_len, device=device)
    return idx[:, None] >= idx[None, :]


def causal_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                     attention_mask: Optional[torch.Tensor] = None) -> torch.Tensor:
    B, H, T, D = q.shape
    allowed = causal_mask(T, q.device)[None, None]
    if attention_mask is not None:
        allowed = allowed & attention_mask[:, None, None, :]
    scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(D)
    scores = torch.where(allowed, scores, torch.finfo(scores.dtype).min)
    return torch.matmul(torch.softmax(scores.float(), dim=-1).to(q.dtype), v)
