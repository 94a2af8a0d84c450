# attnprep: alibi
# expect: wrong_output
# diagnosis: alibi_pow2_rule_ignored + alibi_slopes_from_zero
"""Written after round 3's fixes: slopes as one list comprehension over range(H), the exponent from 0
and no rule for a head count that is not a power of two; the attention itself is right."""

import math

import torch


def alibi_slopes(num_heads):
    slopes = [2 ** (-8 * i / num_heads) for i in range(num_heads)]
    return torch.tensor(slopes, dtype=torch.float32)


def alibi_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    pos = torch.arange(T, device=q.device)
    bias = -alibi_slopes(H).to(q)[:, None, None] * (pos[:, None] - pos[None, :]).to(q)
    scores = q @ k.transpose(-1, -2) / math.sqrt(D) + bias
    keep = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()
    if attention_mask is not None:
        keep = keep & attention_mask[:, None, None, :]
    return torch.where(keep, scores, float("-inf")).softmax(-1) @ v
# bug-line: 13
