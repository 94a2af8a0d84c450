# attnprep: rope
# expect: wrong_output
# diagnosis: rotate_half_sign_flipped
"""Gemma-style rotary embedding whose rotate_half returns [x2, -x1]: every pair turned the other way."""

import torch


def rope_cache(seq_len: int, head_dim: int, theta: float = 10000.0, device=None):
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64, device=device).float() / head_dim))
    position_ids = torch.arange(seq_len, device=device).float()
    freqs = position_ids[:, None] * inv_freq[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((x2, -x1), dim=-1)


def apply_rope(x, cos, sin, positions=None):
    if positions is None:
        positions = torch.arange(x.shape[-2], device=x.device)
    cos = cos[positions]
    sin = sin[positions]
    if positions.dim() == 2:
        cos = cos.unsqueeze(1)
        sin = sin.unsqueeze(1)
    return ((x * cos) + (rotate_half(x) * sin)).to(x.dtype)
# bug-line: 20
