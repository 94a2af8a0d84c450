# attnprep: causal
# expect: mask_leak
# diagnosis: padding_mask_ignored
"""A right-padding shortcut: the padding mask is applied only when the first token of every row is
real... which is exactly right padding; left-padded batches (first token padding) skip it. With
causal masking, right padding never needed it for real queries."""

import math

import torch


def causal_mask(seq_len, device=None):
    return torch.ones(seq_len, seq_len, dtype=torch.bool, device=device).tril()


def causal_attention(q, k, v, attention_mask=None):
    T, D = q.shape[-2], q.shape[-1]
    scores = q @ k.transpose(-1, -2) / math.sqrt(D)
    allowed = causal_mask(T, q.device)
    if attention_mask is not None and bool(attention_mask[:, 0].all()):
        allowed = allowed & attention_mask[:, None, None, :]
    scores = scores.masked_fill(~allowed, float("-inf"))
    return scores.softmax(dim=-1) @ v
