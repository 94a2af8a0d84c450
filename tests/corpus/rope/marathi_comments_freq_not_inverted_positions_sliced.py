# attnprep: rope
# expect: wrong_output
# diagnosis: rope_inv_freq_not_inverted + rope_positions_ignored
"""Marathi comments; the cache's frequencies written theta ** (2i / D) (the inverse forgotten), and
apply_rope slicing the first T rows of cos / sin whatever positions it is given."""
import torch


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    # वारंवारता: प्रत्येक जोडीसाठी एक
    idx = torch.arange(0, head_dim, 2, dtype=torch.float32, device=device)
    inv_freq = theta ** (idx / head_dim)
    pos = torch.arange(seq_len, dtype=torch.float32, device=device)
    freqs = pos[:, None] * inv_freq[None, :]
    emb = torch.cat([freqs, freqs], dim=-1)
    return emb.cos(), emb.sin()


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([-x2, x1], dim=-1)


def apply_rope(x, cos, sin, positions=None):
    T = x.shape[2]
    # स्थानानुसार कोसाइन आणि साइन
    c, s = cos[:T], sin[:T]
    if c.dim() == 3:
        c, s = c[:, None], s[:, None]
    return (x * c + rotate_half(x) * s).to(x.dtype)
# bug-line: 12, 27
