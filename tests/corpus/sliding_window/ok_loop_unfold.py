# attnprep: sliding_window
# expect: passed
"""Correct, own names: the mask from a Python loop over queries, the padding folded in as an
additive bias, q pre-scaled."""

import math

import torch


def sliding_window_mask(seq_len, window, device=None):
    m = torch.zeros(seq_len, seq_len, dtype=torch.bool, device=device)
    for i in range(seq_len):
        m[i, max(0, i - window + 1): i + 1] = True
    return m


def sliding_window_attention(q, k, v, window, attention_mask=None):
    T, dim = q.shape[-2], q.shape[-1]
    qs = q / math.sqrt(dim)
    logits = torch.matmul(qs, k.transpose(-1, -2))
    bias = torch.zeros(T, T, device=q.device).masked_fill(~sliding_window_mask(T, window, q.device), float("-inf"))
    if attention_mask is not None:
        bias = bias + torch.zeros_like(attention_mask, dtype=q.dtype).masked_fill(~attention_mask, float("-inf"))[:, None, None, :]
    w = torch.softmax(logits + bias, dim=-1)
    return torch.matmul(w, v)
