# attnprep: rope
# expect: wrong_output
# diagnosis: rope_positions_ignored
"""Equinox / jax.numpy habits: `jnp.take(cos, positions, axis=0)` written as index_select, shapes
asserted the way a jaxtyping user does, `rope_cache` returning a tuple of float32 arrays. The
positions are honoured when they are (T,), but a (B, T) positions tensor (left-padded batches)
falls into the `else` branch that takes rows 0..T-1."""

import torch


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    inv_freq = 1.0 / theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32, device=device) / head_dim)
    freqs = torch.arange(seq_len, dtype=torch.float32, device=device)[:, None] * inv_freq[None, :]
    emb = torch.cat([freqs, freqs], axis=-1)
    return torch.cos(emb), torch.sin(emb)


def take(a, idx, axis=0):
    return torch.index_select(a, axis, idx)


def rotate_half(x):
    x1, x2 = torch.split(x, x.shape[-1] // 2, dim=-1)
    return torch.cat([-x2, x1], dim=-1)


def apply_rope(x, cos, sin, positions=None):
    B, H, T, D = x.shape
    if positions is not None and positions.ndim == 1:
        c, s = take(cos, positions), take(sin, positions)  # (T, D)
    else:
        c, s = cos[:T], sin[:T]
    assert c.shape[-1] == D
    out = x.float() * c + rotate_half(x.float()) * s
    return out.astype(x.dtype) if hasattr(out, "astype") else out.to(x.dtype)
# bug-line: 32
