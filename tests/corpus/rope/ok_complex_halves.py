# attnprep: rope
# expect: passed
"""Own style: each pair (x[i], x[i + D/2]) read as the complex number x[i] + j·x[i + D/2] and
multiplied by e^(j·angle), with the angles from the first half of the cache."""

import torch


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    half = head_dim // 2
    exponents = torch.arange(half, device=device, dtype=torch.float64) * 2 / head_dim
    inv_freq = torch.pow(torch.tensor(theta, dtype=torch.float64, device=device), -exponents)
    angles = torch.arange(seq_len, device=device, dtype=torch.float64)[:, None] * inv_freq[None, :]
    angles = angles.repeat(1, 2)  # [freqs, freqs]
    return angles.cos().float(), angles.sin().float()


def apply_rope(x, cos, sin, positions=None):
    B, H, T, D = x.shape
    half = D // 2
    if positions is None:
        positions = torch.arange(T, device=x.device).expand(B, T)
    elif positions.ndim == 1:
        positions = positions.expand(B, T)
    rot = torch.complex(cos[positions][..., :half], sin[positions][..., :half])  # (B, T, D/2): e^(j·angle)
    z = torch.complex(x[..., :half].float(), x[..., half:].float()) * rot[:, None]  # (B, H, T, D/2)
    return torch.cat([z.real, z.imag], dim=-1).to(x.dtype)
