# attnprep: rope
# expect: passed
"""Correct: the cos / sin rows for the positions looked up with F.embedding(positions, cos) (an
embedding table habit), which takes (T,) or (B, T) positions alike; rotate_half as unflatten(-1,
(2, -1)).flip(-2) times a sign vector [-1, 1]; inv_freq from exp(-log(theta) * arange(0, D, 2) / D)."""

import math

import torch
import torch.nn.functional as F


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    inv_freq = torch.exp(-math.log(theta) * torch.arange(0, head_dim, 2, device=device, dtype=torch.float32) / head_dim)
    freqs = torch.arange(seq_len, device=device, dtype=torch.float32)[:, None] * inv_freq[None, :]
    emb = torch.cat([freqs, freqs], dim=-1)
    return emb.cos(), emb.sin()


def rotate_half(x):
    sign = x.new_tensor([-1.0, 1.0])[:, None]
    return (x.unflatten(-1, (2, -1)).flip(-2) * sign).flatten(-2)


def apply_rope(x, cos, sin, positions=None):
    T = x.shape[-2]
    if positions is None:
        positions = torch.arange(T, device=x.device)
    c = F.embedding(positions, cos)  # (T, D) or (B, T, D)
    s = F.embedding(positions, sin)
    if c.dim() == 3:
        c, s = c[:, None], s[:, None]  # (B, 1, T, D)
    xf = x.float()
    return (xf * c + rotate_half(xf) * s).to(x.dtype)
