# attnprep: rope
# expect: passed
"""Complex numbers used for the rotate-half form: the two halves read as real and imaginary parts,
multiplied by e^(i·angle), then written back as [real; imag] halves; positions by index_select: correct."""

import torch


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    half = torch.arange(0, head_dim, 2, device=device, dtype=torch.float32) / head_dim
    ang = torch.outer(torch.arange(seq_len, device=device, dtype=torch.float32), theta ** -half)
    ang = torch.cat([ang, ang], -1)
    return torch.cos(ang), torch.sin(ang)


def apply_rope(x, cos, sin, positions=None):
    T, D = x.shape[-2], x.shape[-1]
    pos = torch.arange(T, device=x.device) if positions is None else positions
    c = cos.index_select(0, pos.reshape(-1)).reshape(*pos.shape, D)[..., : D // 2]
    s = sin.index_select(0, pos.reshape(-1)).reshape(*pos.shape, D)[..., : D // 2]
    if pos.dim() == 2:
        c, s = c[:, None], s[:, None]
    z = torch.complex(x[..., : D // 2].float(), x[..., D // 2 :].float()) * torch.complex(c, s)
    return torch.cat([z.real, z.imag], -1).to(x.dtype)
