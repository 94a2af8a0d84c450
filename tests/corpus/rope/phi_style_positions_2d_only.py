# attnprep: rope
# expect: wrong_output
# diagnosis: rope_positions_ignored
"""Phi / StableLM-flavoured rotary helpers (inv_freq, cos_cached / sin_cached, position_ids) that
index the cache with position_ids only when they come per sample, (B, T); a shared (T,) vector
falls back to rows 0 .. T-1."""
import torch


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64, device=device).float() / head_dim))
    t = torch.arange(seq_len, device=device, dtype=torch.int64).type_as(inv_freq)
    freqs = torch.outer(t, inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def apply_rope(x, cos, sin, positions=None):
    seq_len = x.shape[-2]
    if positions is not None and positions.dim() == 2:
        cos_cached, sin_cached = cos[positions].unsqueeze(1), sin[positions].unsqueeze(1)
    else:
        cos_cached, sin_cached = cos[:seq_len], sin[:seq_len]
    return (x * cos_cached + rotate_half(x) * sin_cached).to(x.dtype)
# bug-line: 28
