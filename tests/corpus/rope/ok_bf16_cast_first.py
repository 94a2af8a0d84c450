# attnprep: rope
# expect: passed
"""Casts cos / sin to x's dtype first, as LlamaRotaryEmbedding's forward does: a bfloat16 x is then
rotated in bfloat16 arithmetic, a few roundings away from the exact result."""

import math

import torch


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    freqs = [1.0 / theta ** (2 * i / head_dim) for i in range(head_dim // 2)]
    inv_freq = torch.tensor(freqs, dtype=torch.float32, device=device)
    t = torch.arange(seq_len, device=device).float()
    freqs = t[:, None] * inv_freq[None, :]
    emb = torch.cat([freqs, freqs], dim=1)
    return emb.cos(), emb.sin()


def rotate_half(x):
    x1, x2 = torch.split(x, x.shape[-1] // 2, dim=-1)
    return torch.cat([-x2, x1], dim=-1)


def apply_rope(x, cos, sin, positions=None):
    cos, sin = cos.to(x.dtype), sin.to(x.dtype)
    if positions is None:
        cos, sin = cos[: x.shape[2]], sin[: x.shape[2]]
    elif positions.dim() == 1:
        cos, sin = cos[positions], sin[positions]
    else:
        cos, sin = cos[positions][:, None, :, :], sin[positions][:, None, :, :]
    return x * cos + rotate_half(x) * sin
