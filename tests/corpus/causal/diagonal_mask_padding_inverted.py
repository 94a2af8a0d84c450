# attnprep: causal
# expect: mask_leak
# diagnosis: causal_masks_diagonal + padding_mask_inverted
"""Mistral-ish comments. causal_mask is strict (j < i, the diagonal masked) and the padding mask is
applied where it is True (inverted); -1e9 fills."""

import math

import torch
import torch.nn.functional as F


def causal_mask(seq_len, device=None):
    # strictly lower triangle
    return torch.tril(torch.ones(seq_len, seq_len, dtype=torch.bool, device=device), diagonal=-1)


def causal_attention(q, k, v, attention_mask=None):
    bsz, n_heads, q_len, head_dim = q.shape
    scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(head_dim)
    scores = scores.masked_fill(~causal_mask(q_len, q.device), -1e9)
    if attention_mask is not None:
        scores = scores.masked_fill(attention_mask[:, None, None, :], -1e9)
    return torch.matmul(F.softmax(scores.float(), dim=-1).type_as(q), v)
