# attnprep: alibi
# expect: wrong_output
# diagnosis: alibi_pow2_rule_ignored
"""A Rust developer's port (candle-flavoured): typed helpers, `is_power_of_two` by bit trick, an
explicit Vec-like list for the slopes built with a loop and a `push`, asserts as contracts, and
the attention with `.contiguous()` and `narrow` everywhere."""
import math

import torch


def is_power_of_two(n: int) -> bool:
    return n > 0 and (n & (n - 1)) == 0


def slopes_for_pow2(n: int) -> list:
    base = 2.0 ** (-8.0 / n)
    out = []
    for i in range(1, n + 1):
        out.append(base ** i)
    return out


def alibi_slopes(num_heads: int) -> torch.Tensor:
    assert num_heads >= 1
    slopes = slopes_for_pow2(num_heads)
    return torch.tensor(slopes, dtype=torch.float32)


def closest_pow2_slopes(num_heads: int) -> list:
    n = 1 << (num_heads.bit_length() - 1)
    out = slopes_for_pow2(n)
    extra = slopes_for_pow2(2 * n)[0::2][: num_heads - n]
    out.extend(extra)
    return out


def alibi_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, attention_mask=None) -> torch.Tensor:
    b, h, t, d = q.shape
    assert k.shape == (b, h, t, d) and v.shape == (b, h, t, d)
    slopes = alibi_slopes(h).to(device=q.device, dtype=q.dtype).reshape(1, h, 1, 1)
    pos = torch.arange(t, device=q.device)
    distance = (pos.reshape(t, 1) - pos.reshape(1, t)).to(q.dtype)            # i - j
    scores = q.contiguous().matmul(k.transpose(2, 3).contiguous()) / math.sqrt(d)
    scores = scores - slopes * distance
    blocked = pos.reshape(1, t) > pos.reshape(t, 1)
    if attention_mask is not None:
        blocked = blocked | attention_mask.logical_not().reshape(b, 1, 1, t)
    scores = scores.masked_fill(blocked, f32_min())
    return scores.softmax(dim=3).matmul(v)


def f32_min() -> float:
    return torch.finfo(torch.float32).min
# bug-line: 26
