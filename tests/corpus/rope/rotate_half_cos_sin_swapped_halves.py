# attnprep: rope
# expect: wrong_output
# diagnosis: rotate_half_cos_sin_swapped
"""The rotation written out on the halves with cos and sin exchanged: x1·sin − x2·cos, x2·sin + x1·cos."""

import torch


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, device=device).float() / head_dim))
    t = torch.arange(seq_len, device=device).float()
    freqs = torch.einsum("i,j->ij", t, inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def apply_rope(x, cos, sin, positions=None):
    d = x.shape[-1] // 2
    if positions is None:
        positions = torch.arange(x.shape[-2], device=x.device)
    c, s = cos[positions, :d], sin[positions, :d]
    if positions.ndim == 2:
        c, s = c.unsqueeze(1), s.unsqueeze(1)
    x1, x2 = x[..., :d], x[..., d:]
    return torch.cat([x1 * s - x2 * c, x2 * s + x1 * c], dim=-1).to(x.dtype)
