# attnprep: causal
# expect: wrong_output
# diagnosis: backward_inplace
"""A hand-written softmax that divides in place: backward() raises."""

import math

import torch
import torch.nn.functional as F


def causal_mask(seq_len, device=None):
    # True where query i may attend key j, i.e. j <= i
    return torch.tril(torch.ones(seq_len, seq_len, dtype=torch.bool, device=device))


def causal_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    scores = q @ k.transpose(-2, -1) / math.sqrt(D)  # (B, H, T, T)
    scores = scores.masked_fill(~causal_mask(T, q.device), float("-inf"))
    if attention_mask is not None:
        scores = scores.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
    e = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
    e /= e.sum(dim=-1, keepdim=True)
    attn = e
    return attn @ v  # (B, H, T, D)
