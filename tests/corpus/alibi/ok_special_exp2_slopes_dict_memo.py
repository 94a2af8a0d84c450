# attnprep: alibi
# expect: passed
"""Correct: slopes from torch.special.exp2 of -8 i / n for the closest power of two and -4(2i-1)/n
for the extra heads, memoised in a module dict keyed by H (cloned on return); the distance i - j
clamped at 0 and the causal mask applied separately as uint8."""

import math

import torch

_SLOPES: dict[int, torch.Tensor] = {}


def alibi_slopes(num_heads):
    if num_heads not in _SLOPES:
        n = 1 << (num_heads.bit_length() - 1)
        i = torch.arange(1, n + 1, dtype=torch.float32)
        base = torch.special.exp2(-8.0 * i / n)
        extra = torch.arange(1, num_heads - n + 1, dtype=torch.float32)
        more = torch.special.exp2(-4.0 * (2 * extra - 1) / n)
        _SLOPES[num_heads] = torch.cat([base, more])
    return _SLOPES[num_heads].clone()


def alibi_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    slopes = alibi_slopes(H).to(q.device, q.dtype)
    pos = torch.arange(T, device=q.device)
    dist = (pos[:, None] - pos[None, :]).clamp(min=0).to(q.dtype)  # (T, T)
    s = q @ k.transpose(-1, -2) / math.sqrt(D) - slopes[:, None, None] * dist
    keep = torch.tril(torch.ones(T, T, dtype=torch.uint8, device=q.device))[None, None]
    if attention_mask is not None:
        keep = keep * attention_mask.to(torch.uint8)[:, None, None, :]
    s = s.masked_fill(keep == 0, float("-inf"))
    return s.softmax(-1) @ v
