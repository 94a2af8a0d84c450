# attnprep: rope
# expect: wrong_output
# diagnosis: rope_inv_freq_not_inverted
"""operator.itemgetter / attrgetter habits: the halves picked with itemgetter(slice(...)), the
cache built from `theta ** (arange(0, D, 2) / D)` directly. The frequencies are theta^(2i/D), not
their inverse, so every pair but the first turns faster than position allows (huge angles)."""

from operator import itemgetter

import torch


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    freq = theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32, device=device) / head_dim)
    ang = torch.arange(seq_len, dtype=torch.float32, device=device)[:, None] * freq[None, :]
    ang = torch.cat([ang, ang], dim=-1)
    return ang.cos(), ang.sin()


def apply_rope(x, cos, sin, positions=None):
    D = x.shape[-1]
    first, second = itemgetter(slice(None, D // 2))(x.unbind(-1)), itemgetter(slice(D // 2, None))(x.unbind(-1))
    rot = torch.stack([-t for t in second] + list(first), dim=-1)
    pos = torch.arange(x.shape[-2], device=x.device) if positions is None else positions
    c, s = cos[pos], sin[pos]
    if pos.dim() == 2:
        c, s = c[:, None], s[:, None]
    return (x * c + rot * s).to(x.dtype)
# bug-line: 14
