# attnprep: rope
# expect: passed
"""einsum for the angles, chunk for the halves, positions broadcast by reshaping."""

import torch


def rope_cache(seq_len: int, head_dim: int, theta: float = 10000.0, device=None):
    i = torch.arange(head_dim // 2, dtype=torch.float32, device=device)
    inv_freq = theta ** (-2.0 * i / head_dim)
    t = torch.arange(seq_len, dtype=torch.float32, device=device)
    angles = torch.einsum("t,f->tf", t, inv_freq)
    angles = torch.cat([angles, angles], dim=-1)
    return torch.cos(angles), torch.sin(angles)


def apply_rope(x, cos, sin, positions=None):
    T = x.size(-2)
    if positions is None:
        positions = torch.arange(T, device=x.device)
    c = cos[positions]
    s = sin[positions]
    if c.dim() == 3:
        c = c.unsqueeze(1)
        s = s.unsqueeze(1)
    a, b = x.chunk(2, dim=-1)
    rotated = torch.cat((-b, a), dim=-1)
    return (x * c + rotated * s).type_as(x)
