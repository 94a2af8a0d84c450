# attnprep: causal
# expect: wrong_output
# diagnosis: softmax_wrong_dim
"""Softmax over dim=-2 (the queries) of the (B, H, T, T) scores."""

import math

import torch
import torch.nn.functional as F


def causal_mask(seq_len, device=None):
    mask = torch.tril(torch.ones(seq_len, seq_len, device=device))
    return mask.bool()


def causal_attention(q, k, v, attention_mask=None):
    d_k = q.size(-1)
    T = q.size(-2)
    mask = causal_mask(T, q.device).unsqueeze(0).unsqueeze(0)  # (1, 1, T, T)
    if attention_mask is not None:
        mask = mask * attention_mask.unsqueeze(1).unsqueeze(2)  # (B, 1, T, T)
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d_k)
    scores = scores.masked_fill(mask == 0, -1e9)
    p_attn = F.softmax(scores, dim=-2)
    return torch.matmul(p_attn, v)
