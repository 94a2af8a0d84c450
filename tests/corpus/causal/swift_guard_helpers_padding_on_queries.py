# attnprep: causal
# expect: mask_leak
# diagnosis: padding_mask_on_queries
"""Swift-like guard helpers, each with argument labels as keyword-only parameters
(`broadcastKeyMask(_:toRank:)` in spirit); the key padding mask broadcast as (B, 1, T, 1), so it
hides query rows instead of key columns."""
import math

import torch


def causal_mask(seq_len, device=None):
    # guard seq_len > 0 else { preconditionFailure }
    if seq_len <= 0:
        raise ValueError("seq_len must be positive")
    rows = torch.arange(seq_len, device=device)
    return rows[None, :] <= rows[:, None]


def broadcastKeyMask(mask, *, toRank):
    # guard toRank == 4 else { return mask }
    if toRank != 4:
        return mask
    return mask[:, None, :, None]  # (B, 1, T, 1)


def causal_attention(q, k, v, attention_mask=None):
    T, D = q.shape[-2], q.shape[-1]
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(D)
    allowed = causal_mask(T, device=q.device)
    if attention_mask is not None:
        allowed = allowed & broadcastKeyMask(attention_mask.bool(), toRank=4)
    scores = scores.masked_fill(~allowed, float("-inf"))
    return torch.matmul(torch.softmax(scores, dim=-1), v)
# bug-line: 24
