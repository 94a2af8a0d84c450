# attnprep: rope
# expect: wrong_output
# diagnosis: rope_interleaved_pairs
"""Meta-Llama memory written with view + unbind: pairs (x[2i], x[2i+1]) rotated by the first half
of the cache's angles, stacked and flattened back."""

import torch


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, device=device).float() / head_dim))
    freqs = torch.outer(torch.arange(seq_len, device=device).float(), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def apply_rope(x, cos, sin, positions=None):
    B, H, T, D = x.shape
    if positions is None:
        positions = torch.arange(T, device=x.device)
    c = cos[positions][..., : D // 2]
    s = sin[positions][..., : D // 2]
    if positions.dim() == 2:
        c, s = c[:, None], s[:, None]
    xr, xi = x.float().view(B, H, T, D // 2, 2).unbind(-1)
    out = torch.stack([xr * c - xi * s, xr * s + xi * c], dim=-1).flatten(-2)
    return out.to(x.dtype)
# bug-line: 25, 26
