# attnprep: rope
# expect: passed
"""Gemma-like: typed, positions expanded to (B, T) always, cos/sin gathered with an unsqueeze over heads,
the rotation written as a stacked view."""

from typing import Optional, Tuple

import torch
from torch import Tensor


def rope_cache(seq_len: int, head_dim: int, theta: float = 10000.0,
               device: Optional[torch.device] = None) -> Tuple[Tensor, Tensor]:
    timescale = theta ** (torch.arange(0, head_dim, 2, device=device, dtype=torch.float32) / head_dim)
    sinusoid = torch.arange(seq_len, device=device, dtype=torch.float32)[:, None] / timescale[None, :]
    emb = torch.cat([sinusoid, sinusoid], dim=-1)
    return torch.cos(emb), torch.sin(emb)


def apply_rope(x: Tensor, cos: Tensor, sin: Tensor, positions: Optional[Tensor] = None) -> Tensor:
    B, H, T, D = x.shape
    if positions is None:
        positions = torch.arange(T, device=x.device)
    positions = positions.expand(B, T) if positions.dim() == 1 else positions
    c = cos[positions].unsqueeze(1)  # (B, 1, T, D)
    s = sin[positions].unsqueeze(1)
    x1, x2 = x[..., : D // 2], x[..., D // 2 :]
    rot = torch.stack([-x2, x1], dim=-2).flatten(-2)
    return (x.float() * c + rot.float() * s).type_as(x)
