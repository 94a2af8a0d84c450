# attnprep: rope
# expect: wrong_output
# diagnosis: rope_exponent_arange_half + rope_positions_ignored
"""Two objects, two mistakes: rope_cache's exponent is arange(D/2)/D (HF's arange(0, D, 2) misread) AND apply_rope ignores positions."""

import torch


def rope_cache(seq_len: int, head_dim: int, theta: float = 10000.0, device=None):
    inv_freq = 1.0 / (theta ** (torch.arange(head_dim // 2, device=device).float() / head_dim))
    t = torch.arange(seq_len, device=device).float()
    freqs = torch.outer(t, inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rope(x, cos, sin, positions=None):
    T = x.shape[-2]
    cos, sin = cos[:T].to(x.dtype), sin[:T].to(x.dtype)
    return x * cos + rotate_half(x) * sin
# bug-line: 10, 24
