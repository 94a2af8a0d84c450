# attnprep: causal
# expect: wrong_output
# diagnosis: mask_dtype
"""The mask has the right values as 0/1 floats (tril of ones): attention uses it as `== 0` and is
right, but causal_mask's contract is a bool tensor."""

import math

import torch


def causal_mask(seq_len, device=None):
    return torch.tril(torch.ones(seq_len, seq_len, device=device))  # (T, T) float 0/1


def causal_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    scores = q @ k.transpose(-2, -1) / math.sqrt(D)  # (B, H, T, T)
    scores = scores.masked_fill(causal_mask(T, q.device) == 0, float("-inf"))
    if attention_mask is not None:
        scores = scores.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
    return scores.softmax(dim=-1) @ v  # (B, H, T, D)
