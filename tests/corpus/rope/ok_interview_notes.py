# attnprep: rope
# expect: passed
"""Interview-note style: the rotation written out on the halves, one angle per pair."""

import torch


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    d = head_dim
    theta_i = 1.0 / (theta ** (torch.arange(0, d, 2, device=device).float() / d))  # (d/2,)
    m = torch.arange(seq_len, device=device).float()  # positions
    m_theta = torch.outer(m, theta_i)  # (seq_len, d/2)
    return torch.cat([m_theta.cos(), m_theta.cos()], -1), torch.cat([m_theta.sin(), m_theta.sin()], -1)


def apply_rope(x, cos, sin, positions=None):
    d = x.shape[-1]
    if positions is None:
        positions = torch.arange(x.shape[-2], device=x.device)
    c = cos[positions, : d // 2]
    s = sin[positions, : d // 2]
    if positions.ndim == 2:  # (B, T, d/2) -> (B, 1, T, d/2)
        c, s = c.unsqueeze(1), s.unsqueeze(1)
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]
    out = torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1)
    return out.to(x.dtype)
