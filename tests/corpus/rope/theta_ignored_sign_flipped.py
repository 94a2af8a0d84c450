# attnprep: rope
# expect: wrong_output
# diagnosis: rope_theta_ignored + rotate_half_sign_flipped
"""torchtune-like RoPE with two mistakes in two objects: rope_cache always uses base 10000 (theta ignored) AND rotate_half returns cat([x2, -x1]) (the sign on the wrong half)."""

from typing import Optional

import torch


def rope_cache(seq_len: int, head_dim: int, theta: float = 10000.0, device: Optional[torch.device] = None):
    base = 10000.0
    theta_i = 1.0 / (base ** (torch.arange(0, head_dim, 2, device=device)[: head_dim // 2].float() / head_dim))
    seq_idx = torch.arange(seq_len, dtype=theta_i.dtype, device=device)
    idx_theta = torch.einsum("i,j->ij", seq_idx, theta_i)
    emb = torch.cat([idx_theta, idx_theta], dim=-1)
    return emb.cos(), emb.sin()


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, positions: Optional[torch.Tensor] = None):
    if positions is None:
        positions = torch.arange(x.shape[-2], device=x.device)
    c = cos[positions]
    s = sin[positions]
    if c.dim() == 3:  # (B, T, D): one row per sample
        c, s = c[:, None], s[:, None]
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    rotated = torch.cat([x2, -x1], dim=-1)
    return (x * c + rotated * s).to(x.dtype)
# bug-line: 12, 29
