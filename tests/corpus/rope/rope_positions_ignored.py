# attnprep: rope
# expect: wrong_output
# diagnosis: rope_positions_ignored
"""Slices the first T rows of the cache whatever positions says: right for a prefill only."""

import torch


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    inv_freq = 1.0 / theta ** (torch.arange(0, head_dim, 2, device=device).float() / head_dim)
    freqs = torch.outer(torch.arange(seq_len, device=device).float(), inv_freq)
    emb = torch.cat([freqs, freqs], dim=-1)
    return emb.cos(), emb.sin()


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([-x2, x1], dim=-1)


def apply_rope(x, cos, sin, positions=None):
    T = x.shape[-2]
    cos, sin = cos[:T], sin[:T]
    return (x * cos + rotate_half(x) * sin).to(x.dtype)
