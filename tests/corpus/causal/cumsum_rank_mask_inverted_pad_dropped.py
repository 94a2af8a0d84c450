# attnprep: causal
# expect: mask_leak
# diagnosis: causal_mask_inverted + padding_mask_ignored
"""Masks from cumulative sums: causal_mask compares the rank of each key (a cumsum of ones along a
row) with the row's rank. Two slips, one per function: causal_mask returns `key_rank > query_rank`,
the blocked positions, where the contract wants the allowed ones (causal_attention, written against
that meaning, fills where it is True, so its own causal part is right); and causal_attention never
uses attention_mask."""

import math

import torch


def causal_mask(seq_len, device=None):
    ones = torch.ones(seq_len, seq_len, device=device)
    key_rank, query_rank = ones.cumsum(1), ones.cumsum(0)
    return key_rank > query_rank


def causal_attention(q, k, v, attention_mask=None):
    T = q.shape[-2]
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    scores = scores.masked_fill(causal_mask(T, q.device), float("-inf"))
    return torch.softmax(scores, dim=-1) @ v
# bug-line: 18, 24
