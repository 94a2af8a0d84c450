# attnprep: alibi
# expect: wrong_output
# diagnosis: alibi_slopes_from_zero
"""BLOOM-style slopes built from range(n) instead of range(1, n + 1): head 0 gets slope 1 (2^0) and
every other head the slope of the head before it."""

import math

import torch


def alibi_slopes(num_heads: int) -> torch.Tensor:
    closest_power_of_2 = 2 ** math.floor(math.log2(num_heads))
    base = 2 ** (-(2 ** -(math.log2(closest_power_of_2) - 3)))
    slopes = [base ** i for i in range(closest_power_of_2)]
    if closest_power_of_2 != num_heads:
        extra_base = 2 ** (-(2 ** -(math.log2(2 * closest_power_of_2) - 3)))
        num_remaining = min(closest_power_of_2, num_heads - closest_power_of_2)
        slopes += [extra_base ** i for i in range(1, 1 + 2 * num_remaining, 2)]
    return torch.tensor(slopes, dtype=torch.float32)


def alibi_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    slopes = alibi_slopes(H).to(q.device, q.dtype).view(1, H, 1, 1)
    rel = torch.arange(T, device=q.device)[None, :] - torch.arange(T, device=q.device)[:, None]
    bias = slopes * rel.to(q.dtype)
    scores = q @ k.transpose(-1, -2) / math.sqrt(D) + bias
    allowed = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()
    if attention_mask is not None:
        allowed = allowed & attention_mask[:, None, None, :]
    scores = scores.masked_fill(~allowed, float("-inf"))
    return scores.softmax(-1) @ v
# bug-line: 15
