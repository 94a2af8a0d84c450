# attnprep: rope
# expect: wrong_output
# diagnosis: rope_theta_ignored
"""A RopeConfig dataclass (head_dim, theta, max_positions) built inside rope_cache and read by
attribute, cos / sin gathered with torch.gather-free fancy indexing."""
from dataclasses import dataclass

import torch


@dataclass
class RopeConfig:
    head_dim: int
    theta: float = 10000.0
    max_positions: int = 4096


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    cfg = RopeConfig(head_dim=head_dim, max_positions=seq_len)
    half = torch.arange(0, cfg.head_dim, 2, device=device, dtype=torch.float32)
    inv_freq = torch.pow(cfg.theta, -half / cfg.head_dim)
    t = torch.arange(cfg.max_positions, device=device, dtype=torch.float32)
    freqs = t[:, None] * inv_freq[None, :]
    emb = torch.cat([freqs, freqs], dim=-1)
    return emb.cos(), emb.sin()


def apply_rope(x, cos, sin, positions=None):
    T, D = x.shape[-2], x.shape[-1]
    if positions is None:
        positions = torch.arange(T, device=x.device)
    c, s = cos[positions], sin[positions]
    if c.dim() == 3:
        c, s = c[:, None], s[:, None]
    x1, x2 = x[..., : D // 2], x[..., D // 2:]
    rotated = torch.cat([-x2, x1], dim=-1)
    return (x.float() * c + rotated.float() * s).to(x.dtype)
# bug-line: 19
