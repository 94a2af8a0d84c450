# attnprep: rope
# expect: wrong_output
# diagnosis: rope_interleaved_pairs
"""Meta's original Llama / DeepSeek form: adjacent pairs (x[2i], x[2i+1]) as complex numbers,
rotated by the angles of the first half of the cache."""

import torch


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    inv_freq = 1.0 / theta ** (torch.arange(0, head_dim, 2, device=device).float() / head_dim)
    freqs = torch.outer(torch.arange(seq_len, device=device).float(), inv_freq)
    emb = torch.cat([freqs, freqs], dim=-1)
    return emb.cos(), emb.sin()


def apply_rope(x, cos, sin, positions=None):
    B, H, T, D = x.shape
    if positions is None:
        positions = torch.arange(T, device=x.device)
    cos, sin = cos[positions][..., : D // 2], sin[positions][..., : D // 2]
    if positions.dim() == 2:
        cos, sin = cos[:, None], sin[:, None]
    freqs_cis = torch.complex(cos, sin)
    x_ = torch.view_as_complex(x.float().reshape(B, H, T, D // 2, 2))
    out = torch.view_as_real(x_ * freqs_cis).flatten(-2)
    return out.type_as(x)
