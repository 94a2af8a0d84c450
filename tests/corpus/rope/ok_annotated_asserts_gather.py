# attnprep: rope
# expect: passed
"""Correct: asserts and annotations on everything, the tables computed in float64 then cast to
float32, positions of either shape broadcast to (B, T) and the rows gathered with
torch.index_select on a flattened view, rotate_half by torch.flip of a stacked pair axis."""

from typing import Optional, Tuple

import torch
from torch import Tensor


def rope_cache(seq_len: int, head_dim: int, theta: float = 10000.0,
               device: Optional[torch.device] = None) -> Tuple[Tensor, Tensor]:
    assert head_dim % 2 == 0, head_dim
    i = torch.arange(0, head_dim, 2, dtype=torch.float64, device=device)
    inv_freq: Tensor = theta ** (-i / head_dim)
    t: Tensor = torch.arange(seq_len, dtype=torch.float64, device=device)
    freqs: Tensor = t[:, None] * inv_freq[None, :]
    emb: Tensor = torch.cat([freqs, freqs], dim=1)
    assert emb.shape == (seq_len, head_dim)
    return emb.cos().float(), emb.sin().float()


def rotate_half(x: Tensor) -> Tensor:
    pair = x.unflatten(-1, (2, -1))  # (..., 2, D/2): [x1, x2]
    pair = torch.flip(pair, dims=(-2,)) * torch.tensor([-1.0, 1.0], dtype=x.dtype, device=x.device)[:, None]
    return pair.flatten(-2)  # [-x2, x1]


def apply_rope(x: Tensor, cos: Tensor, sin: Tensor, positions: Optional[Tensor] = None) -> Tensor:
    B, H, T, D = x.shape
    assert cos.shape == sin.shape and cos.shape[-1] == D
    if positions is None:
        positions = torch.arange(T, device=x.device)
    pos: Tensor = positions.expand(B, T) if positions.dim() == 1 else positions
    assert pos.shape == (B, T), pos.shape
    c = torch.index_select(cos, 0, pos.reshape(-1)).view(B, 1, T, D)
    s = torch.index_select(sin, 0, pos.reshape(-1)).view(B, 1, T, D)
    out: Tensor = x * c + rotate_half(x) * s
    assert out.shape == x.shape
    return out.to(x.dtype)
