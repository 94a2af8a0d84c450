# attnprep: causal
# expect: mask_leak
# diagnosis: mask_after_softmax
"""Softmax over the raw scores, then zeroes the masked probabilities (no renormalisation)."""

import math

import torch
import torch.nn.functional as F


def causal_mask(seq_len, device=None):
    # True where query i may attend key j, i.e. j <= i
    return torch.tril(torch.ones(seq_len, seq_len, dtype=torch.bool, device=device))


def causal_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    scores = q @ k.transpose(-2, -1) / math.sqrt(D)  # (B, H, T, T)
    attn = F.softmax(scores, dim=-1)
    attn = attn.masked_fill(~causal_mask(T, q.device), 0.0)
    if attention_mask is not None:
        attn = attn.masked_fill(~attention_mask[:, None, None, :], 0.0)
    return attn @ v  # (B, H, T, D)
