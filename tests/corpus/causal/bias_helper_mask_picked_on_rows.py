# attnprep: causal
# expect: mask_leak
# diagnosis: padding_mask_on_queries
"""Additive biases made by small helpers from bool masks (0 where allowed, -inf where not) and
summed onto the scores; the padding mask is shaped in causal_attention before it goes to the helper."""
import math

import torch


def causal_mask(seq_len, device=None):
    return torch.ones(seq_len, seq_len, dtype=torch.bool, device=device).tril()


def to_bias(allowed, dtype):
    return torch.zeros(allowed.shape, dtype=dtype, device=allowed.device).masked_fill(~allowed, float("-inf"))


def causal_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    scores = q @ k.transpose(-2, -1) / math.sqrt(D)
    scores = scores + to_bias(causal_mask(T, q.device), scores.dtype)
    if attention_mask is not None:
        pad = attention_mask.view(B, 1, T, 1)
        scores = scores + to_bias(pad, scores.dtype)
    return torch.softmax(scores, dim=-1) @ v
# bug-line: 24
