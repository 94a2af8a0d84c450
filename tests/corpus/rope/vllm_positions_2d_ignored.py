# attnprep: rope
# expect: wrong_output
# diagnosis: rope_positions_ignored
"""vLLM-ish: positions are honoured when they are one row (T,), but a per-sample (B, T) tensor is
dropped for arange(T): only the left-padded, per-sample cases show it."""

import torch


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, device=device, dtype=torch.float32) / head_dim))
    t = torch.arange(seq_len, device=device, dtype=torch.float32)
    freqs = torch.einsum("i,j->ij", t, inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def _rotate_neox(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rope(x, cos, sin, positions=None):
    T = x.shape[-2]
    if positions is None or positions.dim() != 1:
        positions = torch.arange(T, device=x.device)
    c = cos.index_select(0, positions)
    s = sin.index_select(0, positions)
    return (x * c + _rotate_neox(x) * s).to(x.dtype)
