# attnprep: causal
# expect: passed
"""Correct: mask rows from a generator, each padded with F.pad; attention per (batch, head) pair via itertools.product."""
import itertools
import math

import torch
import torch.nn.functional as F


def _rows(n, device):
    for i in range(n):
        yield F.pad(torch.ones(i + 1, dtype=torch.bool, device=device), (0, n - i - 1), value=False)


def causal_mask(seq_len: int, device=None) -> torch.Tensor:
    return torch.stack(list(_rows(seq_len, device))) if seq_len else torch.ones(0, 0, dtype=torch.bool, device=device)


def causal_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    base = causal_mask(T, q.device)
    out = torch.empty_like(q)
    for b, h in itertools.product(range(B), range(H)):
        allowed = base if attention_mask is None else base & attention_mask[b][None, :]
        s = q[b, h] @ k[b, h].T / math.sqrt(D)
        s = s.masked_fill(~allowed, -torch.inf)
        out[b, h] = torch.softmax(s, -1) @ v[b, h]
    return out
