# attnprep: flash
# expect: structure
# diagnosis: flash_full_scores
"""Numerically right, and what TorchCode-style tests accept: the whole (L, S) score matrix and a
plain softmax, block_size ignored."""

import math

import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    L, S = q.shape[-2], k.shape[-2]
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (B, H, L, S)
    if is_causal:
        mask = torch.ones(L, S, dtype=torch.bool, device=q.device).tril()
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v
