# attnprep: flash
# expect: structure
# diagnosis: flash_scores_kept
"""One query row at a time, its (1, S) scores kept in a list for a second pass that takes the
softmax: no online softmax, and by the second pass every row of the (L, S) scores is held."""

import math

import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.shape[-2]
    score_rows = []
    for i in range(L):
        s = q[:, :, i:i + 1] @ k.transpose(-2, -1) / math.sqrt(D)  # (B, H, 1, S)
        if is_causal:
            s[..., i + 1:] = float("-inf")
        score_rows.append(s)
    out = torch.empty_like(q)
    for i, s in enumerate(score_rows):
        p = torch.exp(s - s.amax(dim=-1, keepdim=True))
        out[:, :, i:i + 1] = (p / p.sum(dim=-1, keepdim=True)) @ v
    return out
