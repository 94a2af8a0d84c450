# attnprep: causal
# expect: mask_leak
# diagnosis: masked_fill_discarded
"""Both masks combined into one, then a bare masked_fill whose result is never assigned: the
combined mask is built and used, the filled scores are thrown away."""

import math

import torch


def causal_mask(seq_len, device=None):
    return torch.arange(seq_len, device=device)[:, None] >= torch.arange(seq_len, device=device)[None, :]


def causal_attention(q, k, v, attention_mask=None):
    T, D = q.shape[-2], q.shape[-1]
    allowed = causal_mask(T, q.device)  # (T, T)
    if attention_mask is not None:
        allowed = allowed & attention_mask[:, None, None, :]  # (B, 1, T, T)
    scores = torch.einsum("bhqd,bhkd->bhqk", q, k) * D ** -0.5
    scores.masked_fill(allowed.logical_not(), -1e9)  # forgot "scores ="
    return torch.softmax(scores, dim=-1) @ v
# bug-line: 22
