# attnprep: rope
# expect: wrong_output
# diagnosis: rope_inv_freq_not_inverted
"""theta ** (2i / D) without the reciprocal: the frequencies grow instead of falling."""

import torch


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    freq = theta ** (torch.arange(0, head_dim, 2, device=device).float() / head_dim)
    freqs = torch.arange(seq_len, device=device).float()[:, None] * freq[None, :]
    emb = torch.cat([freqs, freqs], dim=-1)
    return emb.cos(), emb.sin()


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([-x2, x1], dim=-1)


def apply_rope(x, cos, sin, positions=None):
    if positions is None:
        positions = torch.arange(x.shape[-2], device=x.device)
    cos, sin = cos[positions], sin[positions]
    if positions.dim() == 2:
        cos, sin = cos[:, None], sin[:, None]
    return (x * cos + rotate_half(x) * sin).to(x.dtype)
