# attnprep: causal
# expect: mask_leak
# diagnosis: causal_mask_inverted
"""causal_mask returns triu(ones, diagonal=1), the blocked positions; attention uses it as allowed."""

import math

import torch
import torch.nn.functional as F


def causal_mask(seq_len, device=None):
    # upper triangle = the future
    return torch.triu(torch.ones(seq_len, seq_len, dtype=torch.bool, device=device), diagonal=1)


def causal_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    scores = q @ k.transpose(-2, -1) / math.sqrt(D)  # (B, H, T, T)
    scores = scores.masked_fill(~causal_mask(T, q.device), float("-inf"))
    if attention_mask is not None:
        scores = scores.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
    attn = F.softmax(scores, dim=-1)
    return attn @ v  # (B, H, T, D)
# bug-line: 14
