# attnprep: causal
# expect: mask_leak
# diagnosis: causal_masks_diagonal
"""The diagonal blocked too (triu with diagonal=0), the causal mask filled with -1e9 and the padding
with -inf: one fill per mask, as written by someone who copied the two lines from two sources."""

import math

import torch
import torch.nn.functional as F


def causal_mask(seq_len, device=None):
    return torch.tril(torch.ones(seq_len, seq_len, dtype=torch.bool, device=device))


def causal_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    scores = q @ k.transpose(-2, -1) / math.sqrt(D)  # (B, H, T, T)
    blocked = torch.triu(torch.ones(T, T, dtype=torch.bool, device=q.device))  # the diagonal too
    scores = scores.masked_fill(blocked, -1e9)
    if attention_mask is not None:
        scores = scores.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
    return F.softmax(scores, dim=-1) @ v  # (B, H, T, D)
