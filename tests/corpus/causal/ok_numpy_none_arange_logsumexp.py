# attnprep: causal
# expect: passed
"""Correct, numpy habits: the mask as arange(T)[:, None] >= arange(T)[None, :] (np.newaxis by None),
the softmax as exp(s - logsumexp(s)), the padding folded in with torch.where and a finfo minimum."""

import math

import torch


def causal_mask(seq_len, device=None):
    i = torch.arange(seq_len, device=device)
    return i[:, None] >= i[None, :]


def causal_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    allowed = causal_mask(T, q.device)[None, None, :, :]
    if attention_mask is not None:
        allowed = allowed & attention_mask[:, None, None, :]
    s = torch.matmul(q, k.swapaxes(-1, -2)) * (1.0 / math.sqrt(D))
    s = torch.where(allowed, s, torch.finfo(s.dtype).min)
    p = torch.exp(s - torch.logsumexp(s, dim=-1, keepdim=True))
    return torch.matmul(p, v)
