# attnprep: alibi
# expect: mask_leak
# diagnosis: alibi_bias_after_softmax
"""A Ruby programmer's habits: each_with_index-style loops (enumerate) building the slopes, `unless`
spelt `if not`, predicate names ending in _q (power_of_two_q), a bang helper that returns its
argument; the distance penalty subtracted from the probabilities after the softmax, over the whole
(T, T) grid, the blocked keys too."""
import math

import torch


def power_of_two_q(n):
    return n & (n - 1) == 0


def alibi_slopes(num_heads):
    closest = 1 << (num_heads.bit_length() - 1)  # the largest power of two <= num_heads
    slopes = []
    for index, _ in enumerate(range(closest)):  # each_with_index
        slopes.append(2.0 ** (-8.0 * (index + 1) / closest))
    if not power_of_two_q(num_heads):  # unless power_of_two?
        for index, _ in enumerate(range(num_heads - closest)):
            slopes.append(2.0 ** (-4.0 * (2 * index + 1) / closest))
    return torch.tensor(slopes, dtype=torch.float32)


def alibi_attention(q, k, v, attention_mask=None):
    batch, heads, length, dim = q.shape
    idx = torch.arange(length, device=q.device)
    penalty = alibi_slopes(heads).to(q.device, q.dtype)[:, None, None] * (idx[:, None] - idx[None, :]).to(q.dtype)
    visible = torch.ones(length, length, dtype=torch.bool, device=q.device).tril()
    if attention_mask is not None:
        visible = visible & attention_mask[:, None, None, :]
    logits = (q @ k.transpose(-2, -1)) / math.sqrt(dim)
    probs = logits.masked_fill(~visible, float("-inf")).softmax(dim=-1)
    probs = probs - penalty
    return probs @ v
# bug-line: 37
