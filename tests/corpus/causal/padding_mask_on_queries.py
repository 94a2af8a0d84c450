# attnprep: causal
# expect: mask_leak
# diagnosis: padding_mask_on_queries
"""Broadcasts attention_mask over the query rows ([:, None, :, None]) instead of the key columns."""

import math

import torch
import torch.nn.functional as F


def causal_mask(seq_len, device=None):
    return torch.tril(torch.ones(seq_len, seq_len, dtype=torch.bool, device=device))


def causal_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    allowed = causal_mask(T, q.device)[None, None]  # (1, 1, T, T)
    if attention_mask is not None:
        allowed = allowed & attention_mask[:, None, :, None]  # (B, 1, T, 1): rows, not columns
    scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(D)
    scores = scores.masked_fill(~allowed, -1e9)
    return torch.einsum("bhqk,bhkd->bhqd", F.softmax(scores, dim=-1), v)
