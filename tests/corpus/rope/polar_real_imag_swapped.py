# attnprep: rope
# expect: wrong_output
# diagnosis: rotate_half_cos_sin_swapped
"""rope_cache through torch.polar on float64 angles; real and imag (cos and sin) returned swapped."""
import torch


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    inv = torch.pow(theta, -torch.arange(0, head_dim, 2, dtype=torch.float64, device=device) / head_dim)
    ang = torch.arange(seq_len, dtype=torch.float64, device=device)[:, None] * inv[None, :]
    z = torch.polar(torch.ones_like(ang), ang)
    z = torch.cat([z, z], dim=-1)
    return z.imag.float(), z.real.float()


def apply_rope(x, cos, sin, positions=None):
    B, H, T, D = x.shape
    if positions is None:
        positions = torch.arange(T, device=x.device)
    flat = positions.reshape(-1)
    c = cos.index_select(0, flat).view(*positions.shape, D)
    s = sin.index_select(0, flat).view(*positions.shape, D)
    if positions.dim() == 2:
        c, s = c.unsqueeze(1), s.unsqueeze(1)
    half = D // 2
    rot = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return (x * c + rot * s).to(x.dtype)
# bug-line: 13
