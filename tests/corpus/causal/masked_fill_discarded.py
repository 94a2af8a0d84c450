# attnprep: causal
# expect: mask_leak
# diagnosis: masked_fill_discarded
"""masked_fill without assigning its result: neither mask is applied (the seed note's slip)."""

import math

import torch
import torch.nn.functional as F


def causal_mask(seq_len, device=None):
    # True where query i may attend key j, i.e. j <= i
    return torch.tril(torch.ones(seq_len, seq_len, dtype=torch.bool, device=device))


def causal_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    scores = q @ k.transpose(-2, -1) / math.sqrt(D)  # (B, H, T, T)
    scores.masked_fill(~causal_mask(T, q.device), float("-inf"))  # the result is not assigned
    if attention_mask is not None:
        scores.masked_fill(~attention_mask[:, None, None, :], float("-inf"))  # the result is not assigned
    attn = F.softmax(scores, dim=-1)
    return attn @ v  # (B, H, T, D)
