# attnprep: causal
# expect: passed
"""Correct: the mask memoised with functools.lru_cache on (seq_len, device), made on the device asked for
(the device check empties the memo first: made before the watch, it read as made on the CPU)."""
import math
from functools import lru_cache

import torch


@lru_cache(maxsize=8)
def _tri(seq_len, device):
    return torch.tril(torch.ones(seq_len, seq_len, dtype=torch.bool, device=device))


def causal_mask(seq_len, device=None):
    return _tri(seq_len, device)


def causal_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    s = q @ k.transpose(-2, -1) / math.sqrt(D)
    keep = causal_mask(T, q.device)
    if attention_mask is not None:
        keep = keep & attention_mask[:, None, None, :]
    return torch.softmax(s.masked_fill(~keep, float("-inf")), dim=-1) @ v
