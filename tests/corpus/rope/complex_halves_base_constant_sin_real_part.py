# attnprep: rope
# expect: wrong_output
# diagnosis: rope_theta_ignored + rotate_half_cos_sin_swapped
"""Rotate-half RoPE through complex numbers of the two halves: z = x1 + i·x2 times e^(iθ) gives
[x1·cos − x2·sin, x1·sin + x2·cos] back as [real, imag]; the base frequency a module constant
(BASE), the cache built from it by a helper."""
import torch

BASE = 10000.0


def inverse_frequencies(head_dim, device=None):
    exps = torch.arange(0, head_dim, 2, dtype=torch.float32, device=device) / head_dim
    return BASE ** -exps


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    inv_freq = inverse_frequencies(head_dim, device)
    angles = torch.outer(torch.arange(seq_len, dtype=torch.float32, device=device), inv_freq)
    emb = torch.cat([angles, angles], dim=-1)
    return emb.cos(), emb.sin()


def apply_rope(x, cos, sin, positions=None):
    half = x.shape[-1] // 2
    if positions is None:
        positions = torch.arange(x.shape[-2], device=x.device)
    c, s = cos[positions, ..., :half], sin[positions, ..., :half]
    if positions.dim() == 2:
        c, s = c[:, None], s[:, None]
    z = torch.complex(x[..., :half].float(), x[..., half:].float())
    rot = torch.complex(s, c)
    y = z * rot
    return torch.cat([y.real, y.imag], dim=-1).to(x.dtype)
# bug-line: 18, 32
