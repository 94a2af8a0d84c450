# attnprep: rope
# expect: passed
"""Correct: apply_rope written for one head's (T, D) matrix and lifted over batch and heads with
torch.func.vmap (twice), the per-sample positions passed as a vmapped argument when they are
(B, T); rotate_half with torch.flip-free slicing; the cache built with torch.polar's angle and
split into cos / sin of [freqs, freqs]."""

import torch
from torch.func import vmap


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    inv = theta ** (-torch.arange(0, head_dim, 2, dtype=torch.float32, device=device) / head_dim)
    ang = torch.arange(seq_len, dtype=torch.float32, device=device)[:, None] * inv
    z = torch.polar(torch.ones_like(ang), ang)
    return torch.cat([z.real, z.real], -1), torch.cat([z.imag, z.imag], -1)


def _one_head(x, c, s):
    # x (T, D), c / s (T, D)
    h = x.shape[-1] // 2
    rot = torch.cat([-x[:, h:], x[:, :h]], dim=-1)
    return x * c + rot * s


def apply_rope(x, cos, sin, positions=None):
    B, H, T, D = x.shape
    if positions is None:
        positions = torch.arange(T, device=x.device)
    if positions.dim() == 1:
        c, s = cos[positions], sin[positions]
        out = vmap(vmap(_one_head, in_dims=(0, None, None)), in_dims=(0, None, None))(x.float(), c, s)
    else:
        c, s = cos[positions], sin[positions]  # (B, T, D)
        out = vmap(vmap(_one_head, in_dims=(0, None, None)), in_dims=(0, 0, 0))(x.float(), c, s)
    return out.to(x.dtype)
