# attnprep: causal
# expect: mask_leak
# diagnosis: padding_mask_inverted
"""Additive biases in Hugging Face's style, both from finfo.min, the padding one without its
1 - mask: the real tokens are blocked, and a key both biases block overflows to -inf."""

import math

import torch


def causal_mask(seq_len, device=None):
    return torch.ones(seq_len, seq_len, device=device).tril().bool()


def causal_attention(q, k, v, attention_mask=None):
    T, D = q.shape[-2:]
    neg = torch.finfo(q.dtype).min
    bias = (~causal_mask(T, q.device)).to(q.dtype) * neg  # (T, T)
    if attention_mask is not None:
        bias = bias + attention_mask[:, None, None, :].to(q.dtype) * neg  # should be (1.0 - mask)
    scores = q @ k.transpose(-2, -1) / math.sqrt(D) + bias
    return scores.softmax(-1) @ v
