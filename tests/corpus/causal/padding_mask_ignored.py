# attnprep: causal
# expect: mask_leak
# diagnosis: padding_mask_ignored
"""Applies the causal mask but never uses attention_mask: real queries attend to (left) padding."""

import math

import torch


def causal_mask(seq_len, device=None):
    return torch.tril(torch.ones(seq_len, seq_len, dtype=torch.bool, device=device))


def causal_attention(q, k, v, attention_mask=None):
    T, D = q.shape[-2], q.shape[-1]
    scores = q @ k.transpose(-2, -1) / math.sqrt(D)  # (B, H, T, T)
    scores = scores.masked_fill(~causal_mask(T, q.device), float("-inf"))
    return scores.softmax(dim=-1) @ v  # (B, H, T, D)
