# attnprep: causal
# expect: passed
"""Correct: (B, H) flattened, baddbmm with an additive bias (B*H, T, T) and alpha = 1/sqrt(D), bmm, view back."""

import math

import torch


def causal_mask(seq_len, device=None):
    return torch.ones(seq_len, seq_len, device=device).tril().bool()


def causal_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    bias = torch.zeros(B, 1, T, T, dtype=q.dtype, device=q.device)
    bias = bias.masked_fill(~causal_mask(T, q.device), float("-inf"))
    if attention_mask is not None:
        bias = bias.masked_fill(~attention_mask.view(B, 1, 1, T), float("-inf"))
    bias = bias.expand(B, H, T, T).reshape(B * H, T, T)
    s = torch.baddbmm(bias, q.reshape(B * H, T, D), k.reshape(B * H, T, D).transpose(1, 2), alpha=1 / math.sqrt(D))
    return torch.bmm(s.softmax(-1), v.reshape(B * H, T, D)).view(B, H, T, D)
