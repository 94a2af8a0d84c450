# attnprep: sliding_window
# expect: mask_leak
# diagnosis: window_not_causal
"""Gemma-2's local-attention layers (`sliding_window`, `is_sliding`) in a typed, dataclass-free
function pair: the window mask from a distance matrix `dist = i - j`, the key padding mask through
torch.where. The window is written symmetric, `dist.abs() < window`, the way a bidirectional
local-attention encoder has it: the future inside the window is visible."""

import math

import torch


def sliding_window_mask(seq_len: int, window: int, device=None) -> torch.Tensor:
    pos = torch.arange(seq_len, device=device)
    dist = pos[:, None] - pos[None, :]
    return dist.abs() < window


def sliding_window_attention(q, k, v, window, attention_mask=None):
    T = q.shape[-2]
    allowed = sliding_window_mask(T, window, q.device)
    if attention_mask is not None:
        allowed = allowed & attention_mask[:, None, None, :]
    scores = torch.einsum("bhid,bhjd->bhij", q, k) / math.sqrt(q.shape[-1])
    scores = torch.where(allowed, scores, torch.full_like(scores, float("-inf")))
    return torch.einsum("bhij,bhjd->bhid", scores.softmax(-1), v)
# bug-line: 17
