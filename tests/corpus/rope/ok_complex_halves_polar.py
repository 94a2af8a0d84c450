# attnprep: rope
# expect: passed
"""Correct: torch.polar for e^(j·angle), the halves (x[:D/2], x[D/2:]) as real and imaginary parts
(torch.complex), the product's real / imag concatenated back — rotate-half through complex numbers."""

import torch


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    inv_freq = 1.0 / theta ** (torch.arange(0, head_dim, 2, device=device).float() / head_dim)
    freqs = torch.outer(torch.arange(seq_len, device=device).float(), inv_freq)
    emb = torch.cat([freqs, freqs], -1)
    return emb.cos(), emb.sin()


def apply_rope(x, cos, sin, positions=None):
    D = x.shape[-1]
    if positions is None:
        positions = torch.arange(x.shape[-2], device=x.device)
    c, s = cos[positions][..., : D // 2], sin[positions][..., : D // 2]
    if positions.dim() == 2:
        c, s = c[:, None], s[:, None]
    rot = torch.polar(torch.ones_like(c), torch.atan2(s, c))  # e^(j·angle)
    xf = x.float()
    z = torch.complex(xf[..., : D // 2], xf[..., D // 2:]) * rot
    return torch.cat([z.real, z.imag], dim=-1).to(x.dtype)
