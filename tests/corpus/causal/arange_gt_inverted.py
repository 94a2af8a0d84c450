# attnprep: causal
# expect: mask_leak
# diagnosis: causal_inverted
"""arange comparison written idx[:, None] <= idx[None, :] (the upper triangle) and used as "allowed"."""

import math

import torch


def causal_mask(seq_len, device=None):
    idx = torch.arange(seq_len, device=device)
    return idx[:, None] <= idx[None, :]


def causal_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    allowed = causal_mask(T, q.device)[None, None]
    if attention_mask is not None:
        allowed = allowed & attention_mask[:, None, None, :]
    scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(D)
    scores = torch.where(allowed, scores, torch.finfo(scores.dtype).min)
    return torch.matmul(torch.softmax(scores, dim=-1), v)
# bug-line: 13
