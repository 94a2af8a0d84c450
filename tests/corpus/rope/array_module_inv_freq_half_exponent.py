# attnprep: rope
# expect: wrong_output
# diagnosis: rope_exponent_arange_half
"""array.array habits: the inverse frequencies are a typed array('d') filled by a loop (the way a
C programmer would fill a table), then one torch.tensor of it; the exponent counted i / head_dim
(arange(D/2) / D) instead of 2i / head_dim."""
from array import array

import torch


def inv_freq_table(head_dim, theta):
    half = head_dim // 2
    table = array("d")
    for i in range(half):
        table.append(theta ** (-(i / head_dim)))
    return table


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    inv = torch.tensor(inv_freq_table(head_dim, theta), dtype=torch.float32, device=device)
    t = torch.arange(seq_len, dtype=torch.float32, device=device)
    freqs = t[:, None] * inv[None, :]
    emb = torch.cat([freqs, freqs], dim=-1)
    return emb.cos(), emb.sin()


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], dim=-1)


def apply_rope(x, cos, sin, positions=None):
    T = x.shape[-2]
    if positions is None:
        positions = torch.arange(T, device=x.device)
    c, s = cos[positions], sin[positions]
    if positions.dim() == 2:
        c, s = c.unsqueeze(1), s.unsqueeze(1)
    return (x * c + rotate_half(x) * s).to(x.dtype)
# bug-line: 16
