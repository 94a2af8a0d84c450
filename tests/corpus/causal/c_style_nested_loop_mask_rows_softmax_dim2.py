# attnprep: causal
# expect: mask_leak
# diagnosis: softmax_wrong_dim + padding_mask_on_queries
"""C habits: the mask filled by two nested for loops into a preallocated tensor (`mask[i][j] =
j <= i`), one function per step with out-parameters written in place, constants in upper case,
a -1e30 fill."""
import math

import torch

NEG_INF = -1.0e30


def causal_mask(seq_len, device=None):
    mask = torch.zeros(seq_len, seq_len, dtype=torch.bool, device=device)
    for i in range(seq_len):
        for j in range(seq_len):
            mask[i][j] = j <= i
    return mask


def fill_blocked(scores, allowed):
    scores.masked_fill_(~allowed, NEG_INF)


def causal_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    scores = torch.matmul(q, k.transpose(2, 3)) * (1.0 / math.sqrt(D))  # (B, H, T, T)
    allowed = causal_mask(T, device=q.device).expand(B, 1, T, T)
    if attention_mask is not None:
        allowed = allowed & attention_mask[:, None, :, None]
    fill_blocked(scores, allowed)
    probs = torch.softmax(scores, dim=2)
    return torch.matmul(probs, v)
# bug-line: 31, 33
