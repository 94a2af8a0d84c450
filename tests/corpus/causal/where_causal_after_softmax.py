# attnprep: causal
# expect: mask_leak
# diagnosis: mask_after_softmax
"""causal_attention masks padded keys before the softmax (torch.where) and zeroes the future with the causal mask after it."""

import math

import torch


def causal_mask(seq_len, device=None):
    return torch.ones(seq_len, seq_len, dtype=torch.bool, device=device).tril()


def causal_attention(q, k, v, attention_mask=None):
    T, D = q.shape[-2:]
    s = q @ k.transpose(-2, -1) / math.sqrt(D)
    if attention_mask is not None:
        s = torch.where(attention_mask[:, None, None, :], s, float("-inf"))
    p = torch.softmax(s, dim=-1)
    p = torch.where(causal_mask(T, q.device), p, 0.0)
    return p @ v
# bug-line: 21
