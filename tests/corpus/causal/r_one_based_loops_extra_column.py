# attnprep: causal
# expect: mask_leak
# diagnosis: causal_leaks_next
"""An R programmer's habits: 1-based loop counters (for (i in 1:T)) shifted by one at every index,
seq_len named like R's seq_len, the mask filled cell by cell, lower.tri thinking."""
import math

import torch


def causal_mask(seq_len, device=None):
    m = torch.zeros(seq_len, seq_len, dtype=torch.bool, device=device)
    for i in range(1, seq_len + 1):          # i in 1:seq_len
        for j in range(1, min(i + 1, seq_len) + 1):
            m[i - 1, j - 1] = True           # lower.tri(m, diag = TRUE)
    return m


def causal_attention(q, k, v, attention_mask=None):
    T = q.shape[-2]
    D = q.shape[-1]
    scores = q @ k.transpose(-2, -1) / math.sqrt(D)
    keep = causal_mask(T, device=q.device)
    if attention_mask is not None:
        keep = keep & attention_mask[:, None, None, :]
    scores = scores.masked_fill(~keep, float("-inf"))
    return scores.softmax(dim=-1) @ v
# bug-line: 14
