# attnprep: rope
# expect: wrong_output
# diagnosis: rope_positions_ignored
"""Ported from a JAX codebase (gemma's positional_embeddings.py): `segment_pos` naming, max_wavelength
for theta, timescale = max_wavelength ** (2i / D), sinusoid_inp = positions / timescale; a vector of
positions is the shared case, a (B, T) one was meant to be handled "later"."""
import torch


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    max_wavelength = theta
    fraction = 2 * torch.arange(0, head_dim // 2, dtype=torch.float32, device=device) / head_dim
    timescale = max_wavelength ** fraction                                   # (D/2,)
    segment_pos = torch.arange(seq_len, dtype=torch.float32, device=device)
    sinusoid_inp = segment_pos[:, None] / timescale[None, :]                 # (S, D/2)
    sinusoid_inp = torch.cat([sinusoid_inp, sinusoid_inp], dim=-1)          # (S, D)
    return torch.cos(sinusoid_inp), torch.sin(sinusoid_inp)


def apply_rope(x, cos, sin, positions=None):
    B, H, T, D = x.shape
    segment_pos = positions
    if segment_pos is None or segment_pos.ndim != 1:
        segment_pos = torch.arange(T, device=x.device)
    c, s = cos[segment_pos], sin[segment_pos]
    if c.ndim == 3:
        c, s = c[:, None], s[:, None]
    first_half, second_half = torch.split(x, D // 2, dim=-1)
    first_part = first_half * c[..., : D // 2] - second_half * s[..., : D // 2]
    second_part = second_half * c[..., D // 2 :] + first_half * s[..., D // 2 :]
    return torch.cat([first_part, second_part], dim=-1).to(x.dtype)
# bug-line: 23
