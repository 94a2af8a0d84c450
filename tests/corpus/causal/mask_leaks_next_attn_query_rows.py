# attnprep: causal
# expect: mask_leak
# diagnosis: padding_mask_on_queries + causal_leaks_next
"""Two objects, two unrelated mistakes: causal_mask uses tril(diagonal=1) (one future key visible) AND causal_attention masks padded query rows instead of keys (torch.where style)."""

import math

import torch


def causal_mask(seq_len: int, device=None) -> torch.Tensor:
    # 下三角：允许看见自己和之前的 token
    return torch.tril(torch.ones(seq_len, seq_len, dtype=torch.bool, device=device), diagonal=1)


def causal_attention(q, k, v, attention_mask=None):
    T, D = q.shape[-2], q.shape[-1]
    scores = q @ k.transpose(-2, -1) / math.sqrt(D)
    allowed = causal_mask(T, q.device)
    if attention_mask is not None:
        allowed = allowed & attention_mask[:, None, :, None]  # (B, 1, T, 1)
    scores = torch.where(allowed, scores, torch.finfo(scores.dtype).min)
    return torch.softmax(scores, dim=-1) @ v
# bug-line: 13, 21
