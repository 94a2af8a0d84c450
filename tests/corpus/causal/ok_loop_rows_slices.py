# attnprep: causal
# expect: passed
"""Correct, explicit loop over query rows: row i attends keys[:i+1]; padding applied per row; results stacked."""

import math

import torch


def causal_mask(seq_len, device=None):
    m = torch.zeros(seq_len, seq_len, dtype=torch.bool, device=device)
    for i in range(seq_len):
        m[i, : i + 1] = True
    return m


def causal_attention(q, k, v, attention_mask=None):
    T, D = q.shape[-2], q.shape[-1]
    rows = []
    for i in range(T):
        s = q[..., i : i + 1, :] @ k[..., : i + 1, :].transpose(-1, -2) / math.sqrt(D)  # (B, H, 1, i+1)
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask[:, None, None, : i + 1], float("-inf"))
        rows.append(torch.softmax(s, dim=-1) @ v[..., : i + 1, :])
    return torch.cat(rows, dim=-2)
