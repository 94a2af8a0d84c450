# attnprep: sdpa
# expect: passed
"""Correct, interview-note style: own names, a numerically stable softmax with a comment on why,
masks merged into one float bias, torch.matmul."""

import math

import torch


def softmax(x, dim=-1):
    # subtract the max so exp never overflows; the result is unchanged
    c = torch.max(x, dim, keepdim=True).values
    y = torch.exp(x - c)
    return y / torch.sum(y, dim, keepdim=True)


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    d_k = query.shape[-1]
    if scale is None:
        scale = 1.0 / math.sqrt(d_k)
    logits = torch.matmul(query, key.transpose(-1, -2)) * scale  # [..., L, S]
    if is_causal:
        L, S = logits.shape[-2], logits.shape[-1]
        future = torch.triu(torch.ones(L, S, device=logits.device, dtype=torch.bool), diagonal=1)
        logits = logits.masked_fill(future, -1e9)
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            bias = torch.zeros_like(attn_mask, dtype=logits.dtype).masked_fill(~attn_mask, float("-inf"))
        else:
            bias = attn_mask
        logits = logits + bias
    weights = softmax(logits, dim=-1)
    return torch.matmul(weights, value)
