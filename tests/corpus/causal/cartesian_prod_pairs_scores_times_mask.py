# attnprep: causal
# expect: mask_leak
# diagnosis: mask_fill_zero
"""The mask from index pairs: torch.cartesian_prod of the positions gives every (i, j), the
allowed ones are j <= i, reshaped to (T, T); the attention keeps the scores where allowed by
multiplying with the mask as a float (a numpy-era habit: `scores * mask`)."""
import math

import torch


def causal_mask(seq_len, device=None):
    pos = torch.arange(seq_len, device=device)
    ij = torch.cartesian_prod(pos, pos)  # (T*T, 2)
    return (ij[:, 1] <= ij[:, 0]).reshape(seq_len, seq_len)


def causal_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    keep = causal_mask(T, device=q.device)[None, None]  # (1, 1, T, T)
    if attention_mask is not None:
        keep = keep & attention_mask[:, None, None, :]
    scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(D)
    scores = scores * keep.to(scores.dtype)
    weights = torch.softmax(scores, dim=-1)
    return torch.matmul(weights, v)
# bug-line: 24
