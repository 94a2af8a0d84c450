# attnprep: causal
# expect: wrong_output
# diagnosis: input_modified
"""Scales q in place (q.mul_): the caller's q changes."""

import math

import torch
import torch.nn.functional as F


def causal_mask(seq_len, device=None):
    # True where query i may attend key j, i.e. j <= i
    return torch.tril(torch.ones(seq_len, seq_len, dtype=torch.bool, device=device))


def causal_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    q.mul_(1 / math.sqrt(D))  # scales the caller's q
    scores = q @ k.transpose(-2, -1)  # (B, H, T, T)
    scores = scores.masked_fill(~causal_mask(T, q.device), float("-inf"))
    if attention_mask is not None:
        scores = scores.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
    attn = F.softmax(scores, dim=-1)
    return attn @ v  # (B, H, T, D)
