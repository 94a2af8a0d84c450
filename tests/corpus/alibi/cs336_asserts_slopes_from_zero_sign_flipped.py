# attnprep: alibi
# expect: wrong_output
# diagnosis: alibi_slopes_from_zero + alibi_bias_sign_flipped
"""CS336-style asserts and shape strings on the ALiBi pair: `alibi_slopes` builds the geometric
sequence with a start and a ratio as the paper's get_slopes_power_of_2 does, then the
non-power-of-two rule; `alibi_attention` builds a (H, T, T) bias from `j - i` distances and asserts
its shape. Two slips, one per function: the exponents run i = 0 .. n-1 (the first head's slope is
1), and the bias is added as +slope * (i - j), rewarding distant keys."""

from __future__ import annotations

import math

import torch


def _pow2_slopes(n: int) -> "list[float]":
    start = 2 ** (-8 / n)
    ratio = start
    return [start * ratio**i / start for i in range(n)]


def alibi_slopes(num_heads: int) -> "Float[Tensor, 'H']":
    assert num_heads > 0
    if math.log2(num_heads).is_integer():
        out = _pow2_slopes(num_heads)
    else:
        n = 2 ** math.floor(math.log2(num_heads))
        out = _pow2_slopes(n) + _pow2_slopes(2 * n)[0::2][: num_heads - n]
    assert len(out) == num_heads
    return torch.tensor(out, dtype=torch.float32)


def alibi_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    assert k.shape == (B, H, T, D) and v.shape == (B, H, T, D)
    slopes = alibi_slopes(H).to(q.device)
    i = torch.arange(T, device=q.device)[:, None]
    j = torch.arange(T, device=q.device)[None, :]
    dist = (i - j).to(q.dtype)  # "T T", >= 0 on the allowed side
    bias = slopes[:, None, None] * dist
    assert bias.shape == (H, T, T)
    scores = q @ k.transpose(-1, -2) / math.sqrt(D) + bias
    blocked = (j > i).expand(B, 1, T, T)
    if attention_mask is not None:
        blocked = blocked | ~attention_mask[:, None, None, :]
    scores = scores.masked_fill(blocked, float("-inf"))
    return scores.softmax(-1) @ v
# bug-line: 20, 41
