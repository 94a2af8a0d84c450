# attnprep: rope
# expect: passed
"""Typed helpers, torch.chunk for the halves, positions broadcast with expand and gathered with
index_select per sample: correct."""

from typing import Optional, Tuple

import torch
from torch import Tensor


def rope_cache(seq_len: int, head_dim: int, theta: float = 10000.0, device=None) -> Tuple[Tensor, Tensor]:
    half = torch.arange(head_dim // 2, dtype=torch.float32, device=device)
    inv_freq = torch.pow(torch.tensor(theta, dtype=torch.float32), -2.0 * half / head_dim)
    angles = torch.arange(seq_len, dtype=torch.float32, device=device)[:, None] * inv_freq[None, :]
    angles = torch.cat([angles, angles], dim=-1)  # (S, D)
    return torch.cos(angles), torch.sin(angles)


def apply_rope(x: Tensor, cos: Tensor, sin: Tensor, positions: Optional[Tensor] = None) -> Tensor:
    B, H, T, D = x.shape
    if positions is None:
        positions = torch.arange(T, device=x.device)
    if positions.dim() == 1:
        positions = positions.unsqueeze(0).expand(B, T)
    c = torch.stack([cos.index_select(0, p) for p in positions]).unsqueeze(1)  # (B, 1, T, D)
    s = torch.stack([sin.index_select(0, p) for p in positions]).unsqueeze(1)
    x1, x2 = torch.chunk(x, 2, dim=-1)
    rotated = torch.cat([-x2, x1], dim=-1)
    return (x * c + rotated * s).type_as(x)
