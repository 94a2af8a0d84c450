# attnprep: causal
# expect: wrong_output
# diagnosis: scale_by_dim
"""Scores divided by head_dim instead of sqrt(head_dim); finfo.min fill, nn.Softmax."""

import math

import torch
import torch.nn as nn


def causal_mask(seq_len, device=None):
    return torch.ones(seq_len, seq_len, dtype=torch.bool, device=device).tril()


def causal_attention(q, k, v, attention_mask=None):
    seq_len, head_dim = q.size(-2), q.size(-1)
    scores = torch.matmul(q, k.transpose(-2, -1)) / head_dim
    neg = torch.finfo(scores.dtype).min
    scores = scores.masked_fill(~causal_mask(seq_len, q.device), neg)
    if attention_mask is not None:
        scores = scores.masked_fill(~attention_mask.bool()[:, None, None, :], neg)
    weights = nn.Softmax(dim=-1)(scores)
    return torch.matmul(weights, v)
