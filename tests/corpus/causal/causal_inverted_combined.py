# attnprep: causal
# expect: mask_leak
# diagnosis: causal_inverted
"""One combined allowed mask, filled where it is True: the past and the real tokens are hidden, the future and the padding kept."""

import math

import torch


def causal_mask(seq_len, device=None):
    future = torch.triu(torch.ones(seq_len, seq_len, dtype=torch.bool, device=device), diagonal=1)
    return ~future


def causal_attention(q, k, v, attention_mask=None):
    T, D = q.shape[-2], q.shape[-1]
    scores = torch.einsum("bhid,bhjd->bhij", q, k) / math.sqrt(D)
    allowed = causal_mask(T, device=q.device)[None, None]  # (1, 1, T, T)
    if attention_mask is not None:
        allowed = allowed & attention_mask[:, None, None, :]  # (B, 1, T, T)
    scores = scores.masked_fill(allowed, float("-inf"))
    probs = scores.softmax(dim=-1)
    return torch.einsum("bhij,bhjd->bhid", probs, v)
# bug-line: 22
