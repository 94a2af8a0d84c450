# attnprep: rope
# expect: wrong_output
# diagnosis: rotate_half_cos_sin_swapped
"""The cache returns (sin, cos); apply_rope is right, so only the cache is wrong."""

import torch


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    inv_freq = 1.0 / theta ** (torch.arange(0, head_dim, 2, device=device).float() / head_dim)
    freqs = torch.outer(torch.arange(seq_len, device=device).float(), inv_freq)
    emb = torch.cat([freqs, freqs], dim=-1)
    return emb.sin(), emb.cos()


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([-x2, x1], dim=-1)


def apply_rope(x, cos, sin, positions=None):
    if positions is None:
        positions = torch.arange(x.shape[-2], device=x.device)
    cos, sin = cos[positions], sin[positions]
    if positions.dim() == 2:
        cos, sin = cos[:, None], sin[:, None]
    return (x * cos + rotate_half(x) * sin).to(x.dtype)
# bug-line: 13
